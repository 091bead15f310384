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
