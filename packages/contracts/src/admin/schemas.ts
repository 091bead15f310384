/**
 * Bodies and queries of the management API. The ingress validates with these and the admin
 * worker parses its job payload with the same schemas.
 */
import { z } from 'zod';

const id = z.coerce.number().int().positive();
const nonNegative = z.number().int().min(0);

/** An array of names, or new-api's comma-separated string. */
const nameList = z.union([
  z.array(z.string().trim().min(1)),
  z.string().transform((s) => s.split(',').map((m) => m.trim()).filter(Boolean)),
]);

/** A model mapping object, or the JSON string new-api stores. */
const modelMapping = z.union([
  z.record(z.string(), z.string()),
  z.string().transform((s, ctx) => {
    if (s.trim() === '') return {};
    try {
      const value: unknown = JSON.parse(s);
      const parsed = z.record(z.string(), z.string()).safeParse(value);
      if (parsed.success) return parsed.data;
    } catch {
      /* reported below */
    }
    ctx.addIssue({ code: 'custom', message: 'must be an object of model names, or its JSON string' });
    return z.NEVER;
  }),
]);

const role = z.union([z.literal(1), z.literal(10), z.literal(100)]);
const username = z.string().min(1, 'must be 1 to 20 characters').max(20, 'must be 1 to 20 characters');
const password = z.string().min(8, 'must be 8 to 64 characters').max(64, 'must be 8 to 64 characters');
const group = z.string().trim().min(1).max(64);

export const loginBody = z.strictObject({ username: z.string().min(1), password: z.string().min(1) });
export const sessionBody = z.strictObject({ session: z.string().min(1) });

export const createUserBody = z.strictObject({
  username,
  password,
  display_name: z.string().max(64).optional(),
  role: role.optional(),
  quota: nonNegative.optional(),
  group: group.optional(),
});

export const updateUserBody = z.strictObject({
  id,
  username: username.optional(),
  password: password.optional(),
  display_name: z.string().max(64).optional(),
  role: role.optional(),
  status: z.union([z.literal(1), z.literal(2)]).optional(),
  quota: nonNegative.optional(),
  group: group.optional(),
});

const channelFields = {
  name: z.string().trim().min(1).max(128),
  type: z.enum(['openai', 'gemini']),
  key: z.string().min(1).max(4096),
  base_url: z.url({ protocol: /^https?$/ }).transform((u) => u.replace(/\/+$/, '')),
  models: nameList.refine((m) => m.length > 0, 'must name at least one model'),
  group: z.union([z.array(group), z.string()]).transform((g) =>
    (Array.isArray(g) ? g : g.split(',')).map((s) => s.trim()).filter(Boolean).join(','),
  ),
  tag: z.string().max(64),
  priority: z.number().int(),
  weight: z.number().int().min(0),
  model_mapping: modelMapping,
  max_concurrency: nonNegative,
  timeout_ms: z.number().int().min(0).max(3_600_000),
  status: z.union([z.literal(1), z.literal(2), z.literal(3)]),
};

export const createChannelBody = z.strictObject({
  name: channelFields.name,
  type: channelFields.type,
  key: channelFields.key,
  base_url: channelFields.base_url,
  models: channelFields.models,
  group: channelFields.group.optional(),
  tag: channelFields.tag.optional(),
  priority: channelFields.priority.optional(),
  weight: channelFields.weight.optional(),
  model_mapping: channelFields.model_mapping.optional(),
  max_concurrency: channelFields.max_concurrency.optional(),
  timeout_ms: channelFields.timeout_ms.optional(),
  status: channelFields.status.optional(),
});

export const updateChannelBody = z.strictObject({
  id,
  name: channelFields.name.optional(),
  type: channelFields.type.optional(),
  key: channelFields.key.optional(),
  base_url: channelFields.base_url.optional(),
  models: channelFields.models.optional(),
  group: channelFields.group.optional(),
  tag: channelFields.tag.optional(),
  priority: channelFields.priority.optional(),
  weight: channelFields.weight.optional(),
  model_mapping: channelFields.model_mapping.optional(),
  max_concurrency: channelFields.max_concurrency.optional(),
  timeout_ms: channelFields.timeout_ms.optional(),
  status: channelFields.status.optional(),
});

export const tagBody = z.strictObject({ tag: z.string().min(1).max(64) });

const expiredTime = z.number().int().refine((t) => t === -1 || t > 0, 'must be -1 (never) or a unix time in seconds');

export const createTokenBody = z.strictObject({
  name: z.string().trim().min(1).max(64),
  user_id: z.number().int().positive().optional(),
  remain_quota: nonNegative.optional(),
  unlimited_quota: z.boolean().optional(),
  expired_time: expiredTime.optional(),
  models: nameList.optional(),
  rpm_limit: nonNegative.optional(),
  priority: z.enum(['interactive', 'batch']).optional(),
});

export const updateTokenBody = z.strictObject({
  id,
  name: z.string().trim().min(1).max(64).optional(),
  status: z.union([z.literal(1), z.literal(2)]).optional(),
  remain_quota: nonNegative.optional(),
  unlimited_quota: z.boolean().optional(),
  expired_time: expiredTime.optional(),
  models: nameList.optional(),
  rpm_limit: nonNegative.optional(),
  priority: z.enum(['interactive', 'batch']).optional(),
});

const pageQuery = {
  p: z.coerce.number().int().min(1).default(1),
  page_size: z.coerce.number().int().min(1).max(100).default(10),
};
export const listUsersQuery = z.strictObject({ ...pageQuery, keyword: z.string().optional() });
export const listChannelsQuery = z.strictObject({
  ...pageQuery,
  tag: z.string().optional(),
  status: z.coerce.number().int().min(1).max(3).optional(),
});
export const listTokensQuery = z.strictObject({ ...pageQuery, user_id: z.coerce.number().int().positive().optional() });
export const idParam = z.strictObject({ id });

export type LoginBody = z.infer<typeof loginBody>;
export type CreateUserBody = z.infer<typeof createUserBody>;
export type UpdateUserBody = z.infer<typeof updateUserBody>;
export type CreateChannelBody = z.infer<typeof createChannelBody>;
export type UpdateChannelBody = z.infer<typeof updateChannelBody>;
export type CreateTokenBody = z.infer<typeof createTokenBody>;
export type UpdateTokenBody = z.infer<typeof updateTokenBody>;
export type ListUsersQuery = z.infer<typeof listUsersQuery>;
export type ListChannelsQuery = z.infer<typeof listChannelsQuery>;
export type ListTokensQuery = z.infer<typeof listTokensQuery>;
