// Where the repository and the shared test folders are, so a test file finds them wherever it sits in test/.
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(import.meta.dirname, '..', '..');
export const FIXTURES_DIR = join(REPO_ROOT, 'test', 'fixtures');
export const CORPORA_DIR = join(REPO_ROOT, 'test', 'corpora');
