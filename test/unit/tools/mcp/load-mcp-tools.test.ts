// MCP servers as tool sources, against real MCP servers written with the official SDK: one spawned over
// stdio, one over Streamable HTTP on 127.0.0.1. Calls go through the kernel's tool runner and registry.
import { getEventListeners } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../../src/kernel/errors.js';
import { createLogger } from '../../../../src/logging/logger.js';
import { loadMcpTools, type McpServerConfig } from '../../../../src/tools/mcp/load-mcp-tools.js';
import { ToolRegistry } from '../../../../src/kernel/tool-registry.js';
import { runToolCall, type ToolRunOptions } from '../../../../src/kernel/run-tool-call.js';
import type { Tool, ToolContext } from '../../../../src/kernel/tool.js';
import { startHttpMcpServer, type HttpMcpServer } from '../../../fixtures/mcp-http-server.js';
import { stdioServer } from '../../../support/mcp-fixtures.js';

const logger = createLogger('mcp-test', 'silent');
const OPTIONS: ToolRunOptions = { defaultTimeoutMs: 5_000, transientRetries: 0, retryBaseDelayMs: 0 };
const FAST_RECONNECT = { reconnectBaseDelayMs: 50, reconnectMaxDelayMs: 200 };

let step = 0;
const ctx = (signal = new AbortController().signal): ToolContext => ({
  signal,
  runId: 'run-mcp',
  callKey: `run-mcp:${++step}:0`,
  once: (effect) => effect(),
  step,
});
const call = (registry: ToolRegistry, name: string, value: unknown = {}, options = OPTIONS) =>
  runToolCall(registry, { name, args: { ok: true, value } }, ctx(), options);

async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('over stdio', () => {
  let loaded: Awaited<ReturnType<typeof loadMcpTools>>;
  let registry: ToolRegistry;
  beforeAll(async () => {
    process.env.MCP_TEST_WORKER_SECRET = 'sk-worker-only';
    loaded = await loadMcpTools(
      [stdioServer({ readOnly: ['echo', 'sleep', 'whoami', 'stats'], timeoutMs: 3_000 })],
      logger,
      FAST_RECONNECT,
    );
    registry = new ToolRegistry(loaded.tools);
  }, 30_000);
  afterAll(async () => {
    delete process.env.MCP_TEST_WORKER_SECRET;
    await loaded?.close();
  });
  const byName = (name: string): Tool => registry.get(name)!;

  it('lists the server’s tools under the server’s prefix, with its JSON Schema for the model', () => {
    expect(registry.names).toEqual(
      expect.arrayContaining(['local_echo', 'local_plan_trip', 'local_refuse', 'local_sleep']),
    );
    const spec = registry.specs.find((s) => s.function.name === 'local_plan_trip')!;
    expect(spec.function.description).toBe('Plan a trip.');
    // The server's schema as it listed it (minus $schema): nothing zod would add (additionalProperties).
    expect(spec.function.parameters).toEqual({
      type: 'object',
      required: ['destination', 'options'],
      properties: {
        destination: { type: 'string', enum: ['paris', 'rome'] },
        travellers: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
        options: {
          type: 'object',
          required: ['nights'],
          properties: { nights: { type: 'number' }, extras: { type: 'array', items: { type: 'string' } } },
        },
      },
    });
    expect(spec.function.parameters).not.toHaveProperty('$schema');
  });

  it('calls a tool and returns its text', async () => {
    const outcome = await call(registry, 'local_echo', { text: 'hello' });
    expect(outcome).toMatchObject({ ok: true, output: 'echo: hello' });
  });

  it('refuses arguments that break the schema before the server sees them, naming the field', async () => {
    const bad = [
      [{ options: { nights: 2 } }, 'destination'],
      [{ destination: 'oslo', options: { nights: 2 } }, 'destination'],
      [{ destination: 'rome', options: {} }, 'options.nights'],
      [{ destination: 'rome', travellers: 1.5, options: { nights: 1 } }, 'travellers'],
    ] as const;
    for (const [args, field] of bad) {
      const outcome = await call(registry, 'local_plan_trip', args);
      expect(outcome).toMatchObject({ ok: false, errorCode: 'invalid_arguments' });
      expect(outcome.output).toContain(`${field}:`);
    }
    const good = await call(registry, 'local_plan_trip', {
      destination: 'rome',
      options: { nights: 2, extras: ['museum'] },
    });
    expect(good).toMatchObject({ ok: true });
    expect(good.output).toContain('"destination":"rome"');
    const stats = JSON.parse((await call(registry, 'local_stats')).output) as {
      calls: Record<string, number>;
    };
    expect(stats.calls.plan_trip).toBe(1);
  });

  it('an isError result and an error thrown by the tool come back as observations', async () => {
    expect(await call(registry, 'local_refuse')).toMatchObject({
      ok: false,
      errorCode: 'mcp_tool_error',
      output: 'Error: quota exceeded for this account',
    });
    const thrown = await call(registry, 'local_explode');
    expect(thrown).toMatchObject({ ok: false, errorCode: 'mcp_tool_error' });
    expect(thrown.output).toContain('disk on fire');
    expect(thrown.infrastructure).toBeUndefined();
  });

  it('summarises images and resources by type and size, and renders structured content as JSON', async () => {
    expect((await call(registry, 'local_picture')).output).toBe(
      'a chart\n[image image/png, 300 bytes]\n[resource file:///report.pdf (application/pdf), 1000 bytes]',
    );
    expect((await call(registry, 'local_totals')).output).toBe('{"north":12,"south":30}');
  });

  it('a call that overruns the server’s time limit is a timeout observation', async () => {
    const started = Date.now();
    const outcome = await call(registry, 'local_sleep', { ms: 20_000 });
    expect(outcome).toMatchObject({
      ok: false,
      errorCode: 'timeout',
      output: 'local_sleep timed out after 3000 ms.',
    });
    expect(Date.now() - started).toBeLessThan(10_000);
    // The connection survives a timeout.
    expect(await call(registry, 'local_echo', { text: 'still here' })).toMatchObject({ ok: true });
  });

  it('marks only the tools the configuration names read-only; the server’s readOnlyHint is not trusted', () => {
    expect(byName('local_echo').readOnly).toBe(true);
    expect(byName('local_sleep').readOnly).toBe(true);
    expect(byName('local_plan_trip').readOnly).toBeUndefined();
    expect(byName('local_refuse').readOnly).toBeUndefined();
  });

  it('passes the configured env and the SDK’s safe defaults to the child, never the worker’s secrets', async () => {
    const { envKeys } = JSON.parse((await call(registry, 'local_whoami')).output) as { envKeys: string[] };
    expect(envKeys).toContain('TEAM_SETTING');
    expect(envKeys).toContain('PATH');
    expect(envKeys).not.toContain('MCP_TEST_WORKER_SECRET');
  });

  it('leaves no listener behind on the signal it is given, call after call', async () => {
    const signal = new AbortController().signal;
    const context = { ...ctx(), signal };
    for (let i = 0; i < 15; i++) await byName('local_echo').execute({ text: `n${i}` }, context);
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });

  it('sends the call key in _meta, so a server can make an effect idempotent', async () => {
    const context = ctx();
    await runToolCall(
      registry,
      { name: 'local_echo', args: { ok: true, value: { text: 'k' } } },
      context,
      OPTIONS,
    );
    const stats = JSON.parse((await call(registry, 'local_stats')).output) as { callKeys: string[] };
    expect(stats.callKeys).toContain(context.callKey);
  });

  it('a server killed mid-call: the call fails as transient, and after the reconnect the tools work again', async () => {
    const { pid } = JSON.parse((await call(registry, 'local_whoami')).output) as { pid: number };
    const inFlight = call(registry, 'local_sleep', { ms: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    process.kill(pid, 'SIGKILL');
    const outcome = await inFlight;
    expect(outcome).toMatchObject({ ok: false, errorCode: 'mcp_unavailable', infrastructure: true });
    expect(outcome.output).toContain('connection to MCP server "local" was lost');
    // While down, calls fail at once as transient; then the worker has spawned a new child.
    const newPid = await eventually(async () => {
      const again = await call(registry, 'local_whoami');
      if (!again.ok) return undefined;
      return (JSON.parse(again.output) as { pid: number }).pid;
    });
    expect(newPid).not.toBe(pid);
    expect(await call(registry, 'local_echo', { text: 'back' })).toMatchObject({
      ok: true,
      output: 'echo: back',
    });
  }, 40_000);

  it('a side-effect call cut by a dying server is an uncertain effect, not retried', async () => {
    // The same server without readOnly: its sleep is a call that may have side effects.
    const effects = await loadMcpTools([stdioServer({ name: 'effects' })], logger, FAST_RECONNECT);
    try {
      const effectsRegistry = new ToolRegistry(effects.tools);
      const { pid } = JSON.parse((await call(effectsRegistry, 'effects_whoami')).output) as { pid: number };
      const retries = { ...OPTIONS, transientRetries: 2, retryBaseDelayMs: 10 };
      const inFlight = call(effectsRegistry, 'effects_sleep', { ms: 10_000 }, retries);
      await new Promise((resolve) => setTimeout(resolve, 300));
      process.kill(pid, 'SIGKILL');
      const outcome = await inFlight;
      expect(outcome).toMatchObject({ ok: true, attempts: 1 });
      expect(outcome.output).toContain('whether effects_sleep took effect is unknown');
      expect(outcome.uncertain).toMatchObject({ tool: 'effects_sleep', what: 'effects_sleep call' });
    } finally {
      await effects.close();
    }
  }, 40_000);

  it('a tool the server stops offering (tools/list_changed) fails as an observation', async () => {
    expect(await call(registry, 'local_retire_echo')).toMatchObject({ ok: true, output: 'echo retired' });
    const outcome = await eventually(async () => {
      // Until the new listing arrives, the server itself answers that it has no such tool.
      const attempt = await call(registry, 'local_echo', { text: 'gone?' });
      return attempt.errorCode === 'mcp_tool_gone' ? attempt : undefined;
    });
    expect(outcome).toMatchObject({ ok: false, errorCode: 'mcp_tool_gone' });
  });
});

describe('over Streamable HTTP', () => {
  let server: HttpMcpServer;
  let loaded: Awaited<ReturnType<typeof loadMcpTools>>;
  let registry: ToolRegistry;
  beforeAll(async () => {
    server = await startHttpMcpServer();
    loaded = await loadMcpTools(
      [
        {
          name: 'remote',
          url: server.url,
          headers: { Authorization: 'Bearer team-token', 'X-Team': 'kpi' },
          readOnly: true,
          toolPrefix: 'kpi',
        },
      ],
      logger,
      FAST_RECONNECT,
    );
    registry = new ToolRegistry(loaded.tools);
  }, 30_000);
  afterAll(async () => {
    await loaded?.close();
    await server?.stop();
  });

  it('lists and calls tools, named with the configured prefix', async () => {
    expect(registry.names).toContain('kpi_echo');
    expect(await call(registry, 'kpi_echo', { text: 'over http' })).toMatchObject({
      ok: true,
      output: 'echo: over http',
    });
    expect(server.state.calls.echo).toBe(1);
  });

  it('sends the configured headers with every request', async () => {
    const { caller } = JSON.parse((await call(registry, 'kpi_whoami')).output) as {
      caller: { authorization: string; team: string };
    };
    expect(caller).toEqual({ authorization: 'Bearer team-token', team: 'kpi' });
    expect(server.headers.length).toBeGreaterThan(2);
    expect(server.headers.every((h) => h.authorization === 'Bearer team-token')).toBe(true);
  });

  it('readOnly: true marks every tool of the server read-only', () => {
    expect(loaded.tools.every((tool) => tool.readOnly === true)).toBe(true);
  });

  it('an isError result is an observation; a stopped server is transient, and a restarted one works again', async () => {
    expect(await call(registry, 'kpi_refuse')).toMatchObject({ ok: false, errorCode: 'mcp_tool_error' });
    // The same server seen as having side effects: a refused connection sent nothing, so it is transient too.
    const effects = await loadMcpTools([{ name: 'effects', url: server.url }], logger, FAST_RECONNECT);
    await server.stop();
    const down = await call(registry, 'kpi_echo', { text: 'anyone?' });
    expect(down).toMatchObject({ ok: false, errorCode: 'mcp_unavailable', infrastructure: true });
    const effectDown = await call(new ToolRegistry(effects.tools), 'effects_echo', { text: 'anyone?' });
    expect(effectDown).toMatchObject({ ok: false, errorCode: 'mcp_unavailable', infrastructure: true });
    expect(effectDown.uncertain).toBeUndefined();
    await effects.close();
    await server.restart();
    const back = await eventually(async () => {
      const attempt = await call(registry, 'kpi_echo', { text: 'back' });
      return attempt.ok ? attempt : undefined;
    });
    expect(back.output).toBe('echo: back');
  }, 40_000);

  it('a server that dies mid-call fails the call as transient soon, not at its time limit', async () => {
    const started = Date.now();
    const inFlight = call(registry, 'kpi_sleep', { ms: 20_000 }, { ...OPTIONS, defaultTimeoutMs: 25_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await server.stop();
    const outcome = await inFlight;
    expect(outcome).toMatchObject({ ok: false, errorCode: 'mcp_unavailable', infrastructure: true });
    expect(Date.now() - started).toBeLessThan(15_000);
    await server.restart();
    await eventually(async () => ((await call(registry, 'kpi_echo', { text: 'x' })).ok ? true : undefined));
  }, 40_000);
});

describe('lifecycle', () => {
  it('close() ends the stdio child', async () => {
    const loaded = await loadMcpTools([stdioServer()], logger);
    const registry = new ToolRegistry(loaded.tools);
    const { pid } = JSON.parse((await call(registry, 'local_whoami')).output) as { pid: number };
    await loaded.close();
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await eventually(async () => (alive() ? undefined : true), 10_000);
    expect(await call(registry, 'local_echo', { text: 'x' })).toMatchObject({
      ok: false,
      errorCode: 'mcp_unavailable',
    });
  }, 30_000);
});

describe('configuration', () => {
  const refusal = async (servers: unknown[]) => {
    const error = await loadMcpTools(servers as McpServerConfig[], logger).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).message;
  };

  it('refuses a server with neither or both of command and url, naming the field', async () => {
    expect(await refusal([{ name: 'a' }])).toMatch(/^mcpServers\[0\]\.command: set either command/);
    expect(
      await refusal([stdioServer(), { name: 'b', command: 'x', url: 'http://127.0.0.1:1/mcp' }]),
    ).toMatch(/^mcpServers\[1\]\.url: /);
    expect(await refusal([{ name: 'c', url: 'ftp://example.com' }])).toMatch(/^mcpServers\[0\]\.url: /);
    expect(await refusal([{ name: 'd', url: 'http://127.0.0.1:1/mcp', env: {} }])).toMatch(
      /^mcpServers\[0\]\.env: only for a stdio server/,
    );
    expect(await refusal([{ name: 'bad name', command: 'x' }])).toMatch(/^mcpServers\[0\]\.name: /);
    expect(await refusal([stdioServer(), stdioServer()])).toMatch(
      /^mcpServers\[1\]\.name: "local" names two/,
    );
  });

  it('a server that cannot be reached at start stops the start with one line naming it', async () => {
    const message = await loadMcpTools([{ name: 'nowhere', url: 'http://127.0.0.1:1/mcp' }], logger, {
      startAttempts: 1,
    }).catch((e: unknown) => (e as Error).message);
    expect(message).toMatch(/^mcpServers\[0\] \("nowhere"\): could not connect/);
    const missing = await loadMcpTools(
      [stdioServer(), { name: 'missing', command: '/nonexistent/mcp-server' }],
      logger,
      { startAttempts: 1 },
    ).catch((e: unknown) => (e as Error).message);
    expect(missing).toBe(
      'mcpServers[1] ("missing"): could not connect and list its tools: spawn /nonexistent/mcp-server ENOENT',
    );
  });
});
