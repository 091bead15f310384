/**
 * The Chromium a browser test drives, found without apt-get: `CHROMIUM_PATH` when set, else the
 * system's `/usr/bin/chromium`, else the Chromium that `@sparticuz/chromium` (a devDependency)
 * ships inside its npm tarball, unpacked into the temp directory on first use. With none of them
 * it throws, saying how to get one: a browser test never skips silently.
 */
import { existsSync } from 'node:fs';

const SYSTEM_CHROMIUM = '/usr/bin/chromium';

/** Flags for a headless run as root on a machine with no network but loopback. */
export const CHROMIUM_ARGS = [
  '--no-sandbox', '--no-zygote', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
] as const;

export interface FoundChromium {
  executablePath: string;
  /** Where it came from, for a test's log. */
  source: 'CHROMIUM_PATH' | 'system' | '@sparticuz/chromium';
}

export async function findChromium(): Promise<FoundChromium> {
  const configured = process.env.CHROMIUM_PATH;
  if (configured) {
    if (!existsSync(configured)) throw new Error(`CHROMIUM_PATH is ${configured}, but there is no file there`);
    return { executablePath: configured, source: 'CHROMIUM_PATH' };
  }
  if (existsSync(SYSTEM_CHROMIUM)) return { executablePath: SYSTEM_CHROMIUM, source: 'system' };
  let packaged: string;
  try {
    const { default: Chromium } = await import('@sparticuz/chromium');
    packaged = await Chromium.executablePath();
  } catch (error) {
    throw new Error(
      'no Chromium for the browser test: /usr/bin/chromium is missing and the npm-packaged one could not be unpacked ' +
        `(${(error as Error).message}). Run \`npm install\` (it brings @sparticuz/chromium, Linux x64), ` +
        'install the system one (Debian/Ubuntu: apt-get install -y chromium), or set CHROMIUM_PATH to a Chromium or Chrome binary.',
    );
  }
  return { executablePath: packaged, source: '@sparticuz/chromium' };
}
