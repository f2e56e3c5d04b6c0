// The options of `sendEmailTool(...)` checked when a configuration calls it, so a plain-JS configuration with
// a wrong shape stops the worker at start with the option's name, instead of failing at the first email
// (`allowedDomains: 'example.com'` would otherwise be read letter by letter, or throw inside a run).
import { ConfigError } from '../kernel/errors.js';

const fail = (field: string, message: string): never => {
  throw new ConfigError('bad_tool_options', `sendEmailTool: ${field} ${message}`);
};

export function checkEmailToolOptions(options: {
  smtpUrl: unknown;
  from: unknown;
  allowedDomains: unknown;
  maxPerRun: unknown;
  needsApproval?: unknown;
}): void {
  if (typeof options.smtpUrl !== 'string' || !/^smtps?:\/\//.test(options.smtpUrl))
    fail('smtpUrl', 'must be an smtp:// or smtps:// URL');
  if (typeof options.from !== 'string' || !options.from.includes('@'))
    fail('from', 'must be an email address');
  const domains = options.allowedDomains;
  if (!Array.isArray(domains)) {
    const example =
      typeof domains === 'string'
        ? JSON.stringify(domains.split(',').map((d) => d.trim()))
        : '["example.com"]';
    fail('allowedDomains', `must be a list of domains, e.g. ${example}`);
  }
  (domains as unknown[]).forEach((domain, i) => {
    if (typeof domain !== 'string' || !/^[^\s@,]+$/.test(domain))
      fail(`allowedDomains[${i}]`, `must be a domain such as "example.com" (got ${JSON.stringify(domain)})`);
  });
  if ('sweepIntervalMs' in options) {
    fail(
      'sweepIntervalMs',
      "was removed: the worker's effect sweeper settles pending emails (EFFECT_SWEEP_INTERVAL_MS)",
    );
  }
  if (!Number.isSafeInteger(options.maxPerRun) || (options.maxPerRun as number) < 0)
    fail('maxPerRun', 'must be a whole number of emails, 0 or more');
  const rule = options.needsApproval;
  if (rule !== undefined && typeof rule !== 'boolean' && typeof rule !== 'function')
    fail('needsApproval', 'must be true, false or a function of the email (to, subject, body)');
}
