import { accessSync, constants } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { findChromium } from './chromium.ts';

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('findChromium', () => {
  it('finds a runnable browser on a machine with only npm packages (or the system one)', async () => {
    vi.stubEnv('CHROMIUM_PATH', '');
    const found = await findChromium();
    expect(() => accessSync(found.executablePath, constants.X_OK)).not.toThrow();
  });

  it('fails, naming the variable, when CHROMIUM_PATH points at nothing', async () => {
    vi.stubEnv('CHROMIUM_PATH', '/nonexistent/chromium');
    await expect(findChromium()).rejects.toThrow(/CHROMIUM_PATH is \/nonexistent\/chromium/);
  });
});
