/**
 * An `azure` channel's key: the resource's API key as it is (`3f2a…`), or a structured
 * credential, a JSON object in the key field:
 *
 *   {"api_key": "<key>", "api_version": "2024-10-21"}
 *   {"entra_token": "<Microsoft Entra ID access token>", "api_version": "2025-04-01-preview"}
 *   {"tenant_id": "<directory id>", "client_id": "<application id>", "client_secret": "<secret>"}
 *
 * `api_version` is the data-plane version every request names (`AZURE_API_VERSION` unless it is
 * set); `entra_token` (or `bearer`) is sent as `Authorization: Bearer`, in place of `api-key`, as
 * it is. A service principal (`tenant_id`, `client_id`, `client_secret`) has its access tokens
 * fetched and refreshed by the gateway (`entra-tokens.ts`), from `authority_host`
 * (`ENTRA_AUTHORITY_HOST` unless it is set: another cloud's, or a test's) for `scope`
 * (`COGNITIVE_SERVICES_SCOPE` unless it is set).
 */
import { createHash } from 'node:crypto';
import { badCredential, credentialField, structuredCredential } from '../channel-credential.ts';

/** The GA data-plane version requests name unless the channel's credential says another. */
export const AZURE_API_VERSION = '2024-10-21';

/** Microsoft Entra ID's global authority. */
export const ENTRA_AUTHORITY_HOST = 'https://login.microsoftonline.com';

/** What a token for Azure OpenAI (Azure AI services) is asked for. */
export const COGNITIVE_SERVICES_SCOPE = 'https://cognitiveservices.azure.com/.default';

export interface ServicePrincipal {
  tenantId: string;
  clientId: string;
  clientSecret: string;
  /** The authority's root, without a trailing slash. */
  authorityHost: string;
  scope: string;
  /** Names this principal among others (a hash of it, never the secret), for the token cache. */
  id: string;
}

export type AzureCredential = { apiVersion: string } & ({ apiKey: string } | { bearer: string } | { servicePrincipal: ServicePrincipal });

export function azureCredential(key: string): AzureCredential {
  const structured = structuredCredential(key, 'azure');
  if (!structured) return { apiKey: key, apiVersion: AZURE_API_VERSION };
  const field = (name: string) => credentialField(structured, name, 'azure');
  const apiVersion = field('api_version') ?? AZURE_API_VERSION;
  const apiKey = field('api_key');
  const bearer = field('entra_token') ?? field('bearer');
  const clientSecret = field('client_secret');
  if ([apiKey, bearer, clientSecret].filter(Boolean).length > 1) throw badCredential('azure', 'has more than one of "api_key", "entra_token" and "client_secret": it takes one');
  if (apiKey) return { apiKey, apiVersion };
  if (bearer) return { bearer, apiVersion };
  if (clientSecret) return { servicePrincipal: servicePrincipal(field, clientSecret), apiVersion };
  throw badCredential('azure', 'has neither "api_key", "entra_token" nor a service principal\'s "client_secret"');
}

function servicePrincipal(field: (name: string) => string | undefined, clientSecret: string): ServicePrincipal {
  const tenantId = field('tenant_id');
  const clientId = field('client_id');
  if (!tenantId || !clientId) throw badCredential('azure', 'has a "client_secret" without "tenant_id" or "client_id"');
  const authorityHost = (field('authority_host') ?? ENTRA_AUTHORITY_HOST).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/?#]+$/.test(authorityHost)) throw badCredential('azure', 'has an "authority_host" that is not an http(s) origin');
  const scope = field('scope') ?? COGNITIVE_SERVICES_SCOPE;
  const id = createHash('sha256').update(JSON.stringify([authorityHost, tenantId, clientId, clientSecret, scope])).digest('base64url');
  return { tenantId, clientId, clientSecret, authorityHost, scope, id };
}
