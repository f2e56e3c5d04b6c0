// An agent defined with `approval: "side-effects"` (the fleet operator's rule: every email this agent sends is read
// by a person first) cannot be switched off by whoever enqueues a task (`"approval": "none"`, a field any token
// holder or batch file may set); a task of an agent without it may ask for it.
import { describe, expect, it } from 'vitest';
import { parseEnv } from '../../../config/env.js';
import { defineAgent } from '../../../src/kernel/define-agent.js';
import { validateTask } from '../../../src/queue/task-schema.js';
import { runConfigFor } from '../../../src/worker/run-config.js';

describe("an agent's approval policy", () => {
  it('cannot be lowered by the task that runs it', () => {
    const careful = defineAgent({
      name: 'careful-mailer',
      description: 'Sends emails, each approved first.',
      tools: ['send_email'],
      approval: 'side-effects',
    });
    const checked = validateTask({ agent: 'careful-mailer', task: 'email everyone', approval: 'none' });
    if (!checked.ok) throw new Error('task refused');
    expect(runConfigFor(checked.task, parseEnv({}), careful).approval.policy).toBe('side-effects');
  });
});

describe('a task of an agent without an approval policy', () => {
  it('may ask for approvals of its own', () => {
    const plain = defineAgent({ name: 'mailer', description: 'Sends emails.', tools: ['send_email'] });
    const asked = validateTask({ agent: 'mailer', task: 'email everyone', approval: 'side-effects' });
    const none = validateTask({ agent: 'mailer', task: 'email everyone' });
    if (!asked.ok || !none.ok) throw new Error('task refused');
    expect(runConfigFor(asked.task, parseEnv({}), plain).approval.policy).toBe('side-effects');
    expect(runConfigFor(none.task, parseEnv({}), plain).approval.policy).toBe('none');
  });
});
