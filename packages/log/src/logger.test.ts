import { afterEach, describe, expect, it } from 'vitest';
import { defaultLogFormat } from './index.ts';

const wasTTY = process.stdout.isTTY;
afterEach(() => {
  process.stdout.isTTY = wasTTY;
});

describe('the log format', () => {
  it('is pretty on a terminal and JSON otherwise', () => {
    process.stdout.isTTY = true;
    expect(defaultLogFormat({})).toBe('pretty');
    process.stdout.isTTY = false;
    expect(defaultLogFormat({})).toBe('json');
  });

  it('follows LOG_FORMAT whatever stdout is', () => {
    process.stdout.isTTY = true;
    expect(defaultLogFormat({ LOG_FORMAT: 'json' })).toBe('json');
    process.stdout.isTTY = false;
    expect(defaultLogFormat({ LOG_FORMAT: 'pretty' })).toBe('pretty');
  });
});

describe('an error in a log line', () => {
  it('shows its class, message and stack, never the properties that carry command arguments', async () => {
    const { safeError } = await import('./index.ts');
    const error = Object.assign(new Error('ERR Error running script'), { command: { name: 'evalsha', args: ['sk-channel-key-in-clear'] }, args: ['x'] });
    const shown = safeError(error) as Record<string, unknown>;
    expect(Object.keys(shown).sort()).toEqual(['message', 'stack', 'type']);
    expect(JSON.stringify(shown)).not.toContain('sk-channel-key-in-clear');
    expect(shown).toMatchObject({ type: 'Error', message: 'ERR Error running script' });
  });
});
