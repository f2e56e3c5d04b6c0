// The command the Dockerfile runs, read from its ENTRYPOINT and CMD, so a test starts the worker exactly as
// the image does and follows the Dockerfile when it changes.
import { readFileSync } from 'node:fs';

/** The command line of the image's main process: ENTRYPOINT then CMD (the last of each, as Docker does). */
export function dockerfileCommand(path = 'Dockerfile'): string[] {
  const lines = joinContinuations(readFileSync(path, 'utf8'));
  const last = (instruction: string): string[] | undefined => {
    const found = lines.filter((line) => new RegExp(`^${instruction}\\s`, 'i').test(line)).at(-1);
    return found === undefined ? undefined : parseForm(found.replace(/^\S+\s+/, ''), instruction);
  };
  const command = [...(last('ENTRYPOINT') ?? []), ...(last('CMD') ?? [])];
  if (command.length === 0) throw new Error(`${path}: no CMD or ENTRYPOINT`);
  return command;
}

function joinContinuations(text: string): string[] {
  return text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

// The exec form is a JSON array; the shell form runs under /bin/sh -c, as Docker does.
function parseForm(value: string, instruction: string): string[] {
  if (!value.startsWith('[')) return ['/bin/sh', '-c', value];
  const parsed: unknown = JSON.parse(value);
  if (!Array.isArray(parsed) || !parsed.every((part) => typeof part === 'string')) {
    throw new Error(`Dockerfile ${instruction}: the exec form must be a JSON array of strings`);
  }
  return parsed;
}
