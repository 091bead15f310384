import { describe, expect, it } from 'vitest';
import { usernameProblem, usernameSkeletons } from './username.ts';

const problem = (raw: string) => usernameProblem(raw.normalize('NFKC'));

describe('usernameSkeletons', () => {
  it("gives look-alikes of root one skeleton: other scripts' o's and zeros, small capitals, digits", () => {
    for (const name of ['r\u0585\u0585t', 'r\u0CE6\u0CE6t', 'r\u1D0F\u1D0Ft', 'r\u0AE6\u0AE6t', 'r\u0966\u0966t', 'r\u101D\u101Dt', 'R00T', 'ｒｏｏｔ']) {
      expect(usernameSkeletons(name.normalize('NFKC')), name).toContain('root');
    }
  });

  it('catches what only case folding with the mapping shows: capital i for l, m for rn', () => {
    expect(usernameSkeletons('aIice')).toContain(usernameSkeletons('alice')[0]);
    expect(usernameSkeletons('kim')).toEqual(usernameSkeletons('kirn'));
    expect(usernameSkeletons('bob')).not.toEqual(usernameSkeletons('rob'));
  });
});

describe('usernameProblem', () => {
  it('refuses invisible and blank characters', () => {
    for (const name of ['root\u2800', 'root\u3164', 'root\uFFA0', '\u115Froot', 'root\u034F', 'root\uFE0F', 'ro\u{E0061}ot']) {
      expect(problem(name), JSON.stringify(name)).toMatch(/invisible or blank|control or format/);
    }
  });

  it('refuses a combining mark left on a Latin letter, and keeps the marks of scripts that need them', () => {
    expect(problem('root\u0301')).toMatch(/combining mark/);
    expect(problem('\u0301root')).toMatch(/combining mark/);
    expect(problem('Zoe\u0308')).toBeUndefined(); // composes to ë
    expect(problem('\u0939\u093F\u0928\u094D\u0926\u0940')).toBeUndefined();
    expect(problem('山田')).toBeUndefined();
  });
});
