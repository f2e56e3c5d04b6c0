// The error classes: name, kind, code, retryable, and their plain-JSON form for results.
import { describe, expect, it } from 'vitest';
import {
  AgentFleetError,
  ConfigError,
  InputError,
  ModelApiError,
  ModelBehaviorError,
  toRunError,
  ToolError,
  TransientToolError,
} from '../src/kernel/errors.js';

describe('error classes', () => {
  it('each has its name and kind, and is an Error', () => {
    const cases: [AgentFleetError, string, string][] = [
      [new ConfigError('unknown_model', 'm'), 'ConfigError', 'config'],
      [new InputError('bad_task', 'm'), 'InputError', 'input'],
      [new ModelApiError('http_500', 'm', { retryable: true }), 'ModelApiError', 'model_api'],
      [new ModelBehaviorError('repeating', 'm'), 'ModelBehaviorError', 'model_behavior'],
      [new ToolError('refused', 'm'), 'ToolError', 'tool'],
      [new TransientToolError('m'), 'ToolError', 'tool'],
    ];
    for (const [error, name, kind] of cases) {
      expect(error).toBeInstanceOf(Error);
      expect(error).toBeInstanceOf(AgentFleetError);
      expect(error.name).toBe(name);
      expect(error.kind).toBe(kind);
      expect(error.message).toBe('m');
      expect(String(error)).toBe(`${name}: m`);
      expect(error.stack?.split('\n')[0]).toBe(`${name}: m`);
    }
  });

  it('are not retryable unless told so', () => {
    expect(new ConfigError('c', 'm').retryable).toBe(false);
    expect(new InputError('c', 'm').retryable).toBe(false);
    expect(new ModelBehaviorError('c', 'm').retryable).toBe(false);
    expect(new InputError('c', 'm', { retryable: true }).retryable).toBe(true);
    expect(new ModelApiError('http_429', 'm', { retryable: true }).retryable).toBe(true);
    expect(new ModelApiError('http_401', 'm', { retryable: false }).retryable).toBe(false);
  });

  it('a tool error is never retryable as a job; transient is a separate flag', () => {
    const plain = new ToolError('refused', 'm');
    expect(plain.transient).toBe(false);
    expect(plain.retryable).toBe(false);
    const transient = new ToolError('reset', 'm', { transient: true });
    expect(transient.transient).toBe(true);
    expect(transient.retryable).toBe(false);
    const shorthand = new TransientToolError('connection reset');
    expect(shorthand).toBeInstanceOf(ToolError);
    expect(shorthand.transient).toBe(true);
    expect(shorthand.code).toBe('transient');
    expect(new TransientToolError('m', { code: 'db_down' }).code).toBe('db_down');
  });

  it('ModelApiError carries status and retry-after', () => {
    const error = new ModelApiError('http_429', 'rate limited', {
      retryable: true,
      status: 429,
      retryAfterMs: 1500,
    });
    expect(error.status).toBe(429);
    expect(error.retryAfterMs).toBe(1500);
    const bare = new ModelApiError('timeout', 'm', { retryable: true });
    expect(bare.status).toBeUndefined();
    expect(bare.retryAfterMs).toBeUndefined();
  });

  it('keeps a cause only when one is given', () => {
    const cause = new Error('socket hang up');
    expect(new ModelApiError('network', 'm', { retryable: true, cause }).cause).toBe(cause);
    expect(new TransientToolError('m', { cause }).cause).toBe(cause);
    expect(new ConfigError('c', 'm', { cause }).cause).toBe(cause);
    expect('cause' in new ConfigError('c', 'm')).toBe(false);
    expect('cause' in new ToolError('c', 'm')).toBe(false);
  });
});

describe('toRunError', () => {
  it('is the structured form of a kernel error, plain JSON and without the cause', () => {
    const error = new ModelApiError('http_503', 'unavailable', {
      retryable: true,
      status: 503,
      cause: new Error('inner'),
    });
    const runError = error.toRunError();
    expect(runError).toEqual({
      kind: 'model_api',
      code: 'http_503',
      message: 'unavailable',
      retryable: true,
    });
    expect(JSON.parse(JSON.stringify(runError))).toEqual(runError);
    expect(toRunError(error)).toEqual(runError);
    expect(toRunError(new ConfigError('unknown_model', 'No price'))).toEqual({
      kind: 'config',
      code: 'unknown_model',
      message: 'No price',
      retryable: false,
    });
  });

  it('anything else is an unexpected system error, never retryable', () => {
    expect(toRunError(new TypeError('x is undefined'))).toEqual({
      kind: 'system',
      code: 'unexpected',
      message: 'x is undefined',
      retryable: false,
    });
    expect(toRunError('a string')).toEqual({
      kind: 'system',
      code: 'unexpected',
      message: 'a string',
      retryable: false,
    });
    expect(toRunError(undefined).message).toBe('undefined');
    expect(toRunError({ code: 'x' }).kind).toBe('system');
  });
});
