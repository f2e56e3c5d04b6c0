// sendEmailTool(...) from a plain-JS configuration: a wrong shape is refused when the configuration is loaded,
// naming the option, above all `allowedDomains` given as one string instead of a list. Pure: nothing is opened.
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/kernel/errors.js';
import { sendEmailTool } from '../../../src/tools/email-tool-source.js';
import { defaultTools } from '../../../src/worker/default-fleet.js';
import { parseEnv } from '../../../config/env.js';

const good = {
  smtpUrl: 'smtp://127.0.0.1:1025',
  from: 'reports@acme.example',
  allowedDomains: ['acme.example'],
  maxPerRun: 3,
};

const refusal = (options: Record<string, unknown>) => {
  try {
    sendEmailTool({ ...good, ...options } as never);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  return 'accepted';
};

describe('sendEmailTool options', () => {
  it('takes a list of domains', () => {
    expect(sendEmailTool(good).names).toEqual(['send_email']);
    expect(refusal({ allowedDomains: [] })).toBe('accepted');
  });

  it('refuses allowedDomains as one string, showing it as a list', () => {
    expect(refusal({ allowedDomains: 'acme.example, example.com' })).toBe(
      'sendEmailTool: allowedDomains must be a list of domains, e.g. ["acme.example","example.com"]',
    );
    expect(refusal({ allowedDomains: undefined })).toBe(
      'sendEmailTool: allowedDomains must be a list of domains, e.g. ["example.com"]',
    );
    expect(refusal({ allowedDomains: ['ok.example', 'a@b.example'] })).toBe(
      'sendEmailTool: allowedDomains[1] must be a domain such as "example.com" (got "a@b.example")',
    );
  });

  it('names the other options it refuses', () => {
    expect(refusal({ smtpUrl: 'http://mail' })).toMatch(/^sendEmailTool: smtpUrl must be an smtp:\/\//);
    expect(refusal({ from: 'nobody' })).toMatch(/^sendEmailTool: from must be an email address/);
    expect(refusal({ maxPerRun: '3' })).toMatch(/^sendEmailTool: maxPerRun must be a whole number/);
    expect(refusal({ sweepIntervalMs: 30_000 })).toMatch(
      /^sendEmailTool: sweepIntervalMs was removed: .*EFFECT_SWEEP_INTERVAL_MS/,
    );
  });
});

describe('defaultTools', () => {
  it('wires the four built-in tools from an environment, the process’s when none is given', () => {
    const names = (tools: ReturnType<typeof defaultTools>) => tools.flatMap((source) => source.names);
    expect(names(defaultTools(parseEnv({ EMAIL_ALLOWED_DOMAINS: 'acme.example' })))).toEqual([
      'sql_query',
      'list_tables',
      'describe_table',
      'send_email',
    ]);
    expect(names(defaultTools())).toHaveLength(4);
  });
});
