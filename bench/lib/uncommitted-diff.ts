// What a checkout's tracked files change against its HEAD, for a results file to say what an experiment ran:
// `git diff HEAD`, results files left out (a run rewrites latest.json), its first 4,000 characters.
import { execFileSync } from 'node:child_process';

const MAX_CHARS = 4_000;

/** '' when nothing differs or `dir` is not a checkout. */
export function uncommittedDiff(dir: string): string {
  try {
    return execFileSync('git', ['-C', dir, 'diff', 'HEAD', '--', '.', ':(exclude)bench/results'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).slice(0, MAX_CHARS);
  } catch {
    return '';
  }
}
