/**
 * Usernames: what a name may hold, the key under which it is unique, and the skeletons under
 * which no two names may look alike. The management schemas validate with `username`; the store
 * indexes `usernameKey` and `usernameSkeletons` in the write that creates or renames a user.
 */
import unhomoglyph from 'unhomoglyph';
import { z } from 'zod';

/** The key under which a username is unique: its NFKC form, lower-cased. */
export const usernameKey = (name: string) => name.normalize('NFKC').toLowerCase();

/**
 * The UTS #39 skeleton of `text`: NFD, default-ignorable code points removed, each character
 * mapped by Unicode's confusables.txt (the data of `unhomoglyph`, from the nodeca project), NFD
 * again. Two strings with one skeleton look alike (`rօօt` with Armenian o's, `r೦೦t` with Kannada
 * zeros and `rᴏᴏt` with small capitals are all `root`).
 */
export function skeleton(text: string): string {
  return unhomoglyph(text.normalize('NFD').replace(/\p{Default_Ignorable_Code_Point}/gu, '')).normalize('NFD');
}

/**
 * The skeletons a name is indexed under; a new name may share none with another user's. Two,
 * because case and confusables interleave: `aIice` (capital i) is `alice` only when mapped before
 * lower-casing, and Cyrillic `Н` and `н` map apart unless lower-cased first.
 */
export function usernameSkeletons(name: string): string[] {
  const folded = name.normalize('NFKC');
  return [...new Set([skeleton(skeleton(folded).toLowerCase()), skeleton(folded.toLowerCase())])];
}

/** Characters that show as nothing or as a blank: default-ignorables (Hangul fillers, variation selectors…), braille blank, whitespace other than a plain space. */
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\u2800\u{1D159}]|(?! )\p{White_Space}/u;
/** The alphabets a homoglyph attack mixes; a name may use one of them. */
const CONFUSABLE_SCRIPTS = [/\p{Script=Latin}/u, /\p{Script=Greek}/u, /\p{Script=Cyrillic}/u];
/**
 * A combining mark NFKC left standing on a Latin, Greek, Cyrillic or common character (`root́`:
 * no letter t-acute exists), or on nothing: Latin-script names need none once composed, and
 * such a mark makes a name that looks like another (`root` with a dot or accent).
 */
const STRAY_MARK = /(?:^|[\p{Script=Latin}\p{Script=Greek}\p{Script=Cyrillic}\p{Script=Common}])\p{M}/u;

/** What is wrong with an NFKC-normalised name, if anything. */
export function usernameProblem(name: string): string | undefined {
  const length = [...name].length;
  if (length < 1 || length > 20) return 'must be 1 to 20 characters';
  if (/[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Cs}\p{Zl}\p{Zp}]/u.test(name)) return 'must not hold control or format characters, or unassigned ones';
  if (INVISIBLE.test(name)) return 'must not hold invisible or blank characters (fillers, braille blank, spaces other than a plain one)';
  if (name.trim() !== name) return 'must not begin or end with a space';
  if (CONFUSABLE_SCRIPTS.filter((script) => script.test(name)).length > 1) return 'must not mix Latin, Greek and Cyrillic letters';
  if (STRAY_MARK.test(name)) return 'must not hold a combining mark on a Latin, Greek, Cyrillic or common character (use the composed letter)';
  return undefined;
}

/**
 * A username as people see it: NFKC-normalised (so look-alike encodings of one name are one
 * name), unique without regard to case (`usernameKey`) and, in the store, by its confusable
 * skeletons (`usernameSkeletons`), with none of the characters `usernameProblem` refuses.
 */
export const username = z.string().transform((raw, ctx) => {
  const name = raw.normalize('NFKC');
  const problem = usernameProblem(name);
  if (problem) {
    ctx.addIssue({ code: 'custom', message: problem });
    return z.NEVER;
  }
  return name;
});
