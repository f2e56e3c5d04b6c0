// The library's validateTask and validateBatch never throw: hostile values (throwing getters, Proxies, huge
// or deep shapes, invisible text) come back as issues naming the field.
import { describe, expect, it } from 'vitest';
import { validateBatch } from '../../../src/batch/batch-schema.js';
import { scanJsonText, TASK_JSON_LIMITS } from '../../../src/queue/json-structure.js';
import { hasVisibleCharacter, validateTask } from '../../../src/queue/task-schema.js';

const issuesOf = (input: unknown) => {
  const validation = validateTask(input);
  return validation.ok ? [] : validation.issues;
};

describe('validateTask with hostile values', () => {
  it('a throwing getter is an issue at its path, not an exception', () => {
    const task = {
      task: 'fine',
      get budget(): unknown {
        throw new Error('boom');
      },
    };
    expect(issuesOf(task)).toEqual([{ path: 'budget', message: 'cannot be read: boom' }]);
    const nested = {
      task: 'fine',
      metadata: Object.defineProperty({}, 'k', {
        enumerable: true,
        get: () => {
          throw new Error('deep');
        },
      }),
    };
    expect(issuesOf(nested)).toEqual([{ path: 'metadata.k', message: 'cannot be read: deep' }]);
  });

  it('a Proxy whose traps throw is an issue, at the task or at the field', () => {
    const trap = () => {
      throw new Error('trapped');
    };
    const everyTrap = new Proxy(
      {},
      { get: trap, ownKeys: trap, getPrototypeOf: trap, getOwnPropertyDescriptor: trap },
    );
    expect(issuesOf(everyTrap)).toEqual([{ path: '', message: 'cannot be read: trapped' }]);
    const field = new Proxy(
      { task: 'x', model: 'm' },
      { get: (target, key) => (key === 'model' ? trap() : Reflect.get(target, key)) },
    );
    expect(issuesOf(field)).toEqual([{ path: 'model', message: 'cannot be read: trapped' }]);
    const { proxy, revoke } = Proxy.revocable({ task: 'x' }, {});
    revoke();
    expect(issuesOf({ task: 'x', tools: proxy })[0]?.path).toBe('tools');
    const array = new Proxy(['sql_query'], {
      get: (target, key) => (key === 'length' ? trap() : Reflect.get(target, key)),
    });
    expect(issuesOf({ task: 'x', tools: array })).toEqual([
      { path: 'tools', message: 'cannot be read: trapped' },
    ]);
  });

  it('reads a getter once and validates what it gave', () => {
    let reads = 0;
    const task = {
      get task() {
        reads++;
        return reads === 1 ? 'first read' : '';
      },
    };
    expect(validateTask(task)).toEqual({ ok: true, task: { task: 'first read' } });
    expect(reads).toBe(1);
  });

  it('a class instance with a throwing getter is an issue too', () => {
    class Sneaky {
      task = 'x';
      get model(): string {
        throw new Error('class getter');
      }
    }
    const issues = issuesOf({ task: 'x', metadata: new Sneaky() });
    expect(issues.length).toBeGreaterThan(0);
    expect(() => validateTask(new Sneaky())).not.toThrow();
  });

  it('refuses shapes over the limits with the path where they broke', () => {
    const deep: Record<string, unknown> = {};
    let cursor = deep;
    for (let i = 0; i < 40; i++) cursor = (cursor['n'] = {}) as Record<string, unknown>;
    const tooDeep = issuesOf({ task: 'x', metadata: deep });
    expect(tooDeep).toHaveLength(1);
    expect(tooDeep[0]!.message).toBe('nests objects and arrays deeper than 32 levels');
    expect(tooDeep[0]!.path).toMatch(/^metadata(\.n)+$/);
    const wide = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, 1]));
    expect(issuesOf({ task: 'x', metadata: wide })).toEqual([
      { path: 'metadata', message: 'has an object of more than 100 keys' },
    ]);
    expect(issuesOf({ task: 'x', tools: Array(10_001).fill('sql_query') })).toEqual([
      { path: 'tools', message: 'has more than 10000 keys and array items' },
    ]);
    // A cycle is only ever too deep, never a stack overflow.
    const cyclic: Record<string, unknown> = { task: 'x' };
    cyclic['metadata'] = cyclic;
    expect(issuesOf(cyclic)[0]!.message).toBe('nests objects and arrays deeper than 32 levels');
  });

  it('keeps a __proto__ key a key, for the schema to refuse', () => {
    expect(issuesOf(JSON.parse('{"task": "x", "__proto__": {"model": "m"}}'))).toEqual([
      { path: '__proto__', message: 'unknown field' },
    ]);
  });
});

describe('validateBatch with hostile values', () => {
  it('never throws either', () => {
    const batch = {
      tasks: [{ task: 'x' }],
      get budget(): unknown {
        throw new Error('nope');
      },
    };
    expect(validateBatch(batch)).toEqual({
      ok: false,
      issues: [{ path: 'budget', message: 'cannot be read: nope' }],
    });
    const trap = new Proxy(
      {},
      {
        ownKeys: () => {
          throw new Error('trapped');
        },
      },
    );
    expect(validateBatch({ tasks: [trap] })).toEqual({
      ok: false,
      issues: [{ path: 'tasks.0', message: 'cannot be read: trapped' }],
    });
  });
});

describe('a task needs a visible character', () => {
  it('refuses whitespace, controls, format characters and blanks alone, naming `task`', () => {
    const invisible = [
      '\u200B',
      '\u2060',
      '\u180E',
      '\u0085',
      '\u0000',
      '\uFEFF',
      '\u00A0\u3000',
      '\u034F\uFE0F',
      '\u3164',
      '\u2800',
      '\u{E0041}',
      ' \t\r\n',
      // Default-ignorable code points not yet assigned (rendered as nothing), and unassigned ones.
      '\u2065',
      '\u{E0080}',
      '\u{E01F0}',
      '\uFFF0',
      '\uFFFF',
      '\u0378',
    ];
    for (const task of invisible) {
      expect(hasVisibleCharacter(task), JSON.stringify(task)).toBe(false);
      // Blank after trimming (U+FEFF, spaces), it is refused as empty instead.
      const issues = issuesOf({ task });
      expect(issues, JSON.stringify(task)).toHaveLength(1);
      expect(issues[0]!.path).toBe('task');
      expect(issues[0]!.message).toMatch(/^must (not be empty|contain at least one visible character)$/);
    }
    for (const task of ['a', '\u200Bx', 'é', '日本', '😀', '1', '\u0301a']) {
      expect(validateTask({ task }).ok, JSON.stringify(task)).toBe(true);
    }
  });
});

describe('scanJsonText', () => {
  const scan = (text: string) => scanJsonText(Buffer.from(text), TASK_JSON_LIMITS);

  it('counts keys and array items outside strings only', () => {
    expect(scan('{"task":"a:b,c[{","tools":["x","y"]}')).toBeNull();
    expect(scan(`{"task":"${'\\":'.repeat(20_000)}"}`)).toBeNull();
    expect(scan(`[${Array(10_000).fill('1').join(',')}]`)).toBeNull();
    expect(scan(`[${Array(10_001).fill('1').join(',')}]`)?.message).toBe(
      'has more than 10000 keys and array items',
    );
    expect(scan('[[],[],{}]')).toBeNull();
  });

  it('refuses depth and wide objects', () => {
    expect(scan(`${'['.repeat(32)}${']'.repeat(32)}`)).toBeNull();
    expect(scan(`${'['.repeat(33)}${']'.repeat(33)}`)?.message).toBe(
      'nests objects and arrays deeper than 32 levels',
    );
    const keys = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":1`).join(',')}}`;
    expect(scan(keys(100))).toBeNull();
    expect(scan(keys(101))?.message).toBe('has an object of more than 100 keys');
  });
});

describe('a refusal stays small', () => {
  it('counts metadata keys before validating any of them', () => {
    const metadata = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`${'k'.repeat(150)}${i}`, 1]));
    expect(issuesOf({ task: 'x', metadata })).toEqual([
      { path: 'metadata', message: 'must have at most 50 keys' },
    ]);
  });

  it('lists at most 10 unknown keys of an object and 100 issues in all', () => {
    const unknown = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`u${i}`, 1]));
    const [issue] = issuesOf({ task: 'x', ...unknown });
    expect(issue?.path.split(', ')).toHaveLength(10);
    expect(issue?.message).toBe('unknown field (and 15 more)');
    const validation = validateBatch({ tasks: Array.from({ length: 150 }, () => ({ task: '' })) });
    const issues = validation.ok ? [] : validation.issues;
    expect(issues).toHaveLength(101);
    expect(issues.at(-1)).toEqual({ path: '', message: 'and 50 more issues' });
  });
});

describe('a task may name its tenant', () => {
  it('accepts a tenant name and refuses anything else, naming `tenant`', () => {
    expect(validateTask({ task: 'x', tenant: 'acme-corp_1.eu@team' })).toMatchObject({
      ok: true,
      task: { tenant: 'acme-corp_1.eu@team' },
    });
    for (const tenant of ['', 'has space', 'a:b', 'x'.repeat(65), 42, null]) {
      const checked = validateTask({ task: 'x', tenant });
      expect(checked.ok, JSON.stringify(tenant)).toBe(false);
      if (checked.ok) continue;
      expect(checked.issues.map((i) => i.path)).toEqual(['tenant']);
    }
  });
});

describe("a child's task may carry its parent call's traceparent", () => {
  const parent = { jobId: 'p', callKey: 'p:1:0', depth: 1 };
  const valid = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

  it('accepts a W3C traceparent of version 00 and refuses anything else, naming the field', () => {
    expect(validateTask({ task: 'x', parent: { ...parent, traceparent: valid } })).toMatchObject({
      ok: true,
      task: { parent: { traceparent: valid } },
    });
    for (const traceparent of [
      '',
      valid.toUpperCase(),
      valid.replace(/^00/, 'ff'),
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
      `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`,
      `${valid}-extra`,
      'traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      42,
    ]) {
      const checked = validateTask({ task: 'x', parent: { ...parent, traceparent } });
      expect(checked.ok, JSON.stringify(traceparent)).toBe(false);
      if (checked.ok) continue;
      expect(checked.issues.map((i) => i.path)).toEqual(['parent.traceparent']);
    }
  });
});
