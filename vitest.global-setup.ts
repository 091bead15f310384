import { makePostgresTemplate, POSTGRES_TEMPLATE_ENV } from '@gateway/testkit/postgres-template';

/** Once for the whole run: the migrated PostgreSQL that each test file's server is copied from. */
export default async function setup(): Promise<() => void> {
  const template = await makePostgresTemplate();
  process.env[POSTGRES_TEMPLATE_ENV] = template.dataDir;
  return () => template.remove();
}
