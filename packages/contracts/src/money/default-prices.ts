/**
 * List prices of the models the built-in channel types serve, in USD per million tokens, from
 * the providers' public pricing pages (OpenAI, Anthropic, Google AI for Developers' Gemini API,
 * standard tier, prompts up to 200k tokens), as read on 2026-11-28 and cross-checked against
 * LiteLLM's `model_prices_and_context_window.json`. An administrator's price for a model
 * (`PUT /api/price/`, or new-api's `ModelRatio`) replaces its entry here; a model in neither
 * costs nothing and says so (docs/management.md, "Prices and budgets").
 */
import type { ModelPrice } from './prices.ts';

const p = (input: number, output: number, cached_input?: number, cache_write?: number): ModelPrice => ({
  input, output,
  ...(cached_input === undefined ? {} : { cached_input }),
  ...(cache_write === undefined ? {} : { cache_write }),
});

export const DEFAULT_PRICES_DATE = '2026-11-28';

export const defaultPrices: Readonly<Record<string, ModelPrice>> = {
  // OpenAI: chat, reasoning and Responses models (cached input as listed; no cache-write charge).
  'gpt-5.2': p(1.75, 14, 0.175),
  'gpt-5.1': p(1.25, 10, 0.125),
  'gpt-5.1-codex': p(1.25, 10, 0.125),
  'gpt-5.1-codex-mini': p(0.25, 2, 0.025),
  'gpt-5': p(1.25, 10, 0.125),
  'gpt-5-codex': p(1.25, 10, 0.125),
  'gpt-5-mini': p(0.25, 2, 0.025),
  'gpt-5-nano': p(0.05, 0.4, 0.005),
  'gpt-5-pro': p(15, 120),
  'gpt-4.1': p(2, 8, 0.5),
  'gpt-4.1-mini': p(0.4, 1.6, 0.1),
  'gpt-4.1-nano': p(0.1, 0.4, 0.025),
  'gpt-4o': p(2.5, 10, 1.25),
  'gpt-4o-mini': p(0.15, 0.6, 0.075),
  'o3': p(2, 8, 0.5),
  'o3-mini': p(1.1, 4.4, 0.55),
  'o4-mini': p(1.1, 4.4, 0.275),
  'gpt-3.5-turbo-instruct': p(1.5, 2),
  // OpenAI: embeddings (input only).
  'text-embedding-3-small': p(0.02, 0),
  'text-embedding-3-large': p(0.13, 0),
  'text-embedding-ada-002': p(0.1, 0),
  // Anthropic: cache reads at 0.1× input, five-minute cache writes at 1.25×.
  'claude-opus-4-5': p(5, 25, 0.5, 6.25),
  'claude-opus-4-1': p(15, 75, 1.5, 18.75),
  'claude-opus-4-0': p(15, 75, 1.5, 18.75),
  'claude-sonnet-4-5': p(3, 15, 0.3, 3.75),
  'claude-sonnet-4-0': p(3, 15, 0.3, 3.75),
  'claude-3-7-sonnet-latest': p(3, 15, 0.3, 3.75),
  'claude-haiku-4-5': p(1, 5, 0.1, 1.25),
  'claude-3-5-haiku-latest': p(0.8, 4, 0.08, 1),
  // Google Gemini API: text input, cached input at the listed context-cache rate.
  'gemini-3-pro-preview': p(2, 12, 0.2),
  'gemini-2.5-pro': p(1.25, 10, 0.125),
  'gemini-2.5-flash': p(0.3, 2.5, 0.03),
  'gemini-2.5-flash-lite': p(0.1, 0.4, 0.01),
  'gemini-2.0-flash': p(0.1, 0.4, 0.025),
  'gemini-embedding-001': p(0.15, 0),
  // Speech: text in, audio out, each in the tokens the upstream counts (Gemini 25 audio tokens a second).
  'gemini-2.5-flash-preview-tts': p(0.5, 10),
  'gemini-2.5-pro-preview-tts': p(1, 20),
  'gpt-4o-mini-tts': p(0.6, 12),
};
