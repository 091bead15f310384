import type { BudgetPeriod } from '../money/budget-period.ts';

/** The stored records, with new-api's field names and status numbers. */
export const Role = { common: 1, admin: 10, root: 100 } as const;
export type Role = (typeof Role)[keyof typeof Role];

export const UserStatus = { enabled: 1, disabled: 2 } as const;
export const ChannelStatus = { enabled: 1, manuallyDisabled: 2, autoDisabled: 3 } as const;
export const TokenStatus = { enabled: 1, disabled: 2, expired: 3, exhausted: 4 } as const;

/**
 * The kinds of upstream a channel may be, one per provider folder in @gateway/providers: the one
 * list the channel schema and the provider registry are written from.
 */
export const CHANNEL_TYPES = ['openai', 'gemini', 'anthropic', 'azure', 'bedrock', 'vertex'] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

/**
 * A budget in money on a key or a user (LiteLLM's `max_budget` and `budget_duration`), in US
 * dollars: requests are refused with 429 once `budget_spend` (its spend in the current period)
 * reaches `max_budget`; 0 is no budget. `spend` counts since the record was made.
 */
export interface Budget {
  max_budget: number;
  budget_duration: BudgetPeriod;
  spend: number;
  budget_spend: number;
  /** When the current period started (epoch s), as the spend was last counted. */
  budget_period: number;
}
export type Priority = 'interactive' | 'batch';

export interface User extends Budget {
  id: number;
  username: string;
  display_name: string;
  role: number;
  status: number;
  quota: number;
  used_quota: number;
  request_count: number;
  group: string;
  created_time: number;
  /** Limits that bind every key of the user (see the admin schemas' `userLimits`). */
  rpm_limit: number;
  models: string[];
  priority: Priority;
  max_keys: number;
  max_in_flight: number;
}

/** API keys a user may hold unless an administrator sets its `max_keys`. */
export const DEFAULT_MAX_KEYS = 100;

export interface Channel {
  id: number;
  name: string;
  type: ChannelType;
  /**
   * In the store: the key encrypted under SECRET_KEY (`enc:v1:…`). Masked (`sk-a…xyz`) whenever
   * a channel leaves the store for a caller.
   */
  key: string;
  /** The key's mask, made by the gateway before it encrypted the key (the store never sees it in clear). */
  key_mask?: string;
  base_url: string;
  models: string[];
  group: string;
  tag: string;
  priority: number;
  weight: number;
  model_mapping: Record<string, string>;
  /**
   * An `openai` channel whose upstream serves OpenAI's Responses API (`/v1/responses`): the
   * Responses door passes its requests through untranslated (hosted tools, `include`,
   * `truncation`, …). Unset or false: translated to chat completions.
   */
  responses_api?: boolean;
  /**
   * What one prompt token read from the provider's prompt cache is charged, in quota units
   * (a token otherwise counts 1): unset is 1, so a cache read costs a user what any token does
   * until an administrator sets the provider's discount (0.1 for Anthropic's, 0.5 or 0.25 for
   * OpenAI's models). `cache_write_ratio` the same for a token written to the cache (1.25 for
   * Anthropic's five-minute cache).
   */
  cache_read_ratio?: number;
  cache_write_ratio?: number;
  max_concurrency: number;
  timeout_ms: number;
  status: number;
  status_reason: string;
  created_time: number;
  used_quota: number;
  response_time: number;
}

export interface Token extends Budget {
  id: number;
  user_id: number;
  name: string;
  /** Masked; the full key is shown once, at creation. */
  key: string;
  status: number;
  remain_quota: number;
  unlimited_quota: boolean;
  used_quota: number;
  expired_time: number;
  models: string[];
  rpm_limit: number;
  priority: Priority;
  max_in_flight: number;
  created_time: number;
  accessed_time: number;
}

export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  page_size: number;
}

/** Who asks: resolved by the ingress from the access token. */
export interface Actor {
  id: number;
  role: number;
}
