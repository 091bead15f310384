/**
 * An `azure` channel's key: the resource's API key as it is (`3f2a…`), or a structured
 * credential, a JSON object in the key field:
 *
 *   {"api_key": "<key>", "api_version": "2024-10-21"}
 *   {"entra_token": "<Microsoft Entra ID access token>", "api_version": "2025-04-01-preview"}
 *
 * `api_version` is the data-plane version every request names (`AZURE_API_VERSION` unless it is
 * set); `entra_token` (or `bearer`) is sent as `Authorization: Bearer`, in place of `api-key`.
 */
import { badCredential, credentialField, structuredCredential } from '../channel-credential.ts';

/** The GA data-plane version requests name unless the channel's credential says another. */
export const AZURE_API_VERSION = '2024-10-21';

export type AzureCredential = { apiVersion: string } & ({ apiKey: string } | { bearer: string });

export function azureCredential(key: string): AzureCredential {
  const structured = structuredCredential(key, 'azure');
  if (!structured) return { apiKey: key, apiVersion: AZURE_API_VERSION };
  const apiVersion = credentialField(structured, 'api_version', 'azure') ?? AZURE_API_VERSION;
  const apiKey = credentialField(structured, 'api_key', 'azure');
  const bearer = credentialField(structured, 'entra_token', 'azure') ?? credentialField(structured, 'bearer', 'azure');
  if (apiKey && bearer) throw badCredential('azure', 'has both "api_key" and "entra_token": it takes one');
  if (apiKey) return { apiKey, apiVersion };
  if (bearer) return { bearer, apiVersion };
  throw badCredential('azure', 'has neither "api_key" nor "entra_token"');
}
