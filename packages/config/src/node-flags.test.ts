/**
 * The start scripts spell each service's V8 flags out (a package.json cannot import them): they
 * must be the ones `nodeFlagsOf` gives, or `npm start` in a workspace runs a service unlike the
 * one that was measured. The Dockerfile and the compose file are held to the same in
 * test/container-image.test.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { nodeFlagsOf } from './node-flags.ts';

const root = new URL('../../../', import.meta.url);
const scriptsOf = (packageJson: URL) => (JSON.parse(readFileSync(packageJson, 'utf8')) as { scripts: Record<string, string> }).scripts;
const services = readdirSync(new URL('services/', root));

describe('the start scripts', () => {
  it('run every service with its flags, from the root and from its own workspace', () => {
    expect(services.length).toBeGreaterThan(0);
    const rootScripts = scriptsOf(new URL('package.json', root));
    for (const service of services) {
      const flags = nodeFlagsOf(service);
      expect(rootScripts[`start:${service}`], service).toBe(['node', ...flags, `services/${service}/src/main.ts`].join(' '));
      expect(scriptsOf(new URL(`services/${service}/package.json`, root)).start, service).toBe(['node', ...flags, 'src/main.ts'].join(' '));
    }
  });
});
