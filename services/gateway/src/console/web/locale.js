// The browser's language as a tag Intl accepts, for the console's numbers and dates. A browser
// reports what its system gives it: Chromium under LANG=C.UTF-8 says `en-US@posix`, under
// de_DE.UTF-8@euro `de-DE@euro`, and Intl throws `Invalid language tag` for both. uPlot makes
// its number format from navigator.language as its module loads, so one such tag left the whole
// page at "Loading…". This module is the page's first import: when the browser's tag is refused,
// navigator.language (and languages) say the usable one before any library reads them.

const FALLBACK = 'en-US';

/** `tag` as Intl accepts it, or undefined: tried as it is, then as a POSIX name (`de_DE.UTF-8@euro` → `de-DE`). */
function usable(tag) {
  if (typeof tag !== 'string') return undefined;
  for (const candidate of [tag, tag.replace(/[.@].*$/, '').replace(/_/g, '-')]) {
    // `C` and `POSIX` are no language, though a one-letter tag alone is refused anyway.
    if (candidate === '' || /^(c|posix)$/i.test(candidate)) continue;
    try {
      return new Intl.NumberFormat(candidate).resolvedOptions().locale;
    } catch {
      // refused: the next form, or the next of the browser's languages
    }
  }
  return undefined;
}

const reported = [navigator.language, ...(navigator.languages ?? [])];
export const locale = reported.map(usable).find((tag) => tag !== undefined) ?? FALLBACK;

const accepted = (tag) => { try { new Intl.NumberFormat(tag); return true; } catch { return false; } };
if (!accepted(navigator.language)) Object.defineProperty(navigator, 'language', { value: locale, configurable: true });
if (!(navigator.languages ?? []).every(accepted)) {
  Object.defineProperty(navigator, 'languages', { value: Object.freeze([locale]), configurable: true });
}
