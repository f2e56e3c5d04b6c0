// `name:secret` lists in the environment (API_TOKENS, BOARD_APPROVERS): a name says who acted, as a decision
// records it. No message here ever shows a secret: a malformed item is named by its position, never by its text
// (it may be a secret typed where a name goes).
import { z } from 'zod';

export const SECRET_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

export interface NamedSecret {
  name: string;
  secret: string;
}

/**
 * `name:<word>` items separated by commas, the secret everything after the first colon, at least `minChars`
 * long; names 1 to 64 letters, digits and `_.-`, each given once; `distinctSecrets`: no secret under two names.
 */
export function namedSecretsSchema(word: string, minChars: number, distinctSecrets = false) {
  return z.string().transform((value, ctx): NamedSecret[] => {
    const refuse = (message: string) => {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    };
    const found: NamedSecret[] = [];
    const items = value
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean);
    for (const [i, item] of items.entries()) {
      const at = item.indexOf(':');
      if (at < 0) return refuse(`item ${i + 1} must be name:${word}`);
      const name = item.slice(0, at).trim();
      const secret = item.slice(at + 1).trim();
      if (!SECRET_NAME.test(name))
        return refuse(`item ${i + 1}: the name must be 1 to 64 letters, digits and _.- (name:${word})`);
      if (secret.length < minChars)
        return refuse(`the ${word} of "${name}" must be at least ${minChars} characters`);
      if (found.some((other) => other.name === name)) return refuse(`the name "${name}" is given twice`);
      const twin = distinctSecrets ? found.find((other) => other.secret === secret) : undefined;
      if (twin) return refuse(`"${twin.name}" and "${name}" have the same ${word}`);
      found.push({ name, secret });
    }
    return found.length > 0 ? found : refuse(`must hold at least one name:${word}`);
  });
}
