// One MCP server as the worker sees it: a client connected over stdio or Streamable HTTP, the tools it
// lists, and a reconnect with backoff whenever the connection is lost (the stdio child exited, the HTTP
// endpoint stopped answering). While it is down, calls fail at once as transient tool errors.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  ErrorCode,
  McpError,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool as McpTool,
} from '@modelcontextprotocol/sdk/types.js';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { TransientToolError } from '../../kernel/errors.js';
import type { Logger } from '../../logging/logger.js';
import { retryDelayMs } from '../../queue/retry-schedule.js';
import type { McpServerConfig } from './mcp-server-config.js';
import { NOT_CONNECTED_CODES } from '../../util/socket-errors.js';

export interface McpConnectionOptions {
  /** Limit of the handshake and of one tools/list page. */
  connectTimeoutMs: number;
  /** First reconnect delay; doubled after each failed attempt up to reconnectMaxDelayMs. */
  reconnectBaseDelayMs: number;
  reconnectMaxDelayMs: number;
}

/** The connection was lost while the call was in flight: the server may or may not have acted on it. */
export class McpCallInterrupted extends Error {}

/** Pages of tools/list followed at most; a server that pages forever is cut here. */
const MAX_LIST_PAGES = 100;
/** Characters of one stderr line of a stdio server that reach the log. */
const STDERR_LINE_MAX = 1_000;
/** The `_meta` key carrying the fleet's call key, for servers that make effects idempotent. */
export const CALL_KEY_META = 'agent-fleet/callKey';

export class McpConnection {
  private client: Client | undefined;
  private connected = false;
  private closing = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private failedAttempts = 0;
  private listedTools: readonly McpTool[] = [];

  /** Called after every listing but the first (reconnect, tools/list_changed) with the new list. */
  onToolsListed: ((tools: readonly McpTool[]) => void) | undefined;

  constructor(
    readonly config: McpServerConfig,
    private readonly logger: Logger,
    private readonly options: McpConnectionOptions,
  ) {}

  get tools(): readonly McpTool[] {
    return this.listedTools;
  }

  get isConnected(): boolean {
    return this.connected;
  }

  /** Connects and lists the tools; throws when the server cannot be reached or refuses. */
  async start(): Promise<void> {
    await this.connect();
  }

  async callTool(
    name: string,
    args: Record<string, unknown>,
    call: { signal: AbortSignal; timeoutMs: number; callKey: string },
  ): Promise<CallToolResult> {
    const client = this.client;
    if (!client || !this.connected) {
      throw new TransientToolError(`MCP server "${this.config.name}" is unavailable (reconnecting)`, {
        code: 'mcp_unavailable',
      });
    }
    // The SDK never removes its listener from the signal it is given: give it one per call.
    const perCall = new AbortController();
    const forward = () => perCall.abort(call.signal.reason);
    call.signal.addEventListener('abort', forward, { once: true });
    if (call.signal.aborted) forward();
    try {
      const result = await client.callTool(
        { name, arguments: args, _meta: { [CALL_KEY_META]: call.callKey } },
        CallToolResultSchema,
        // The tool runner's own limit fires first; this one only frees the SDK's bookkeeping.
        { signal: perCall.signal, timeout: call.timeoutMs + 1_000 },
      );
      return result as CallToolResult;
    } catch (error) {
      if (call.signal.aborted) throw error;
      const failure = transportFailure(error);
      if (failure === undefined) throw error;
      this.lost(client, error);
      if (failure === 'not_sent') {
        throw new TransientToolError(`MCP server "${this.config.name}" is unreachable: ${messageOf(error)}`, {
          code: 'mcp_unavailable',
          cause: error,
        });
      }
      throw new McpCallInterrupted(`the connection to MCP server "${this.config.name}" was lost`, {
        cause: error,
      });
    } finally {
      call.signal.removeEventListener('abort', forward);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    this.connected = false;
    // Closing a stdio client ends the child's stdin, then SIGTERM, then SIGKILL.
    await client?.close().catch((error: unknown) => {
      this.logger.warn({ err: error }, 'closing the MCP client failed');
    });
  }

  private async connect(): Promise<void> {
    const client = new Client({ name: 'agent-fleet', version: '1' }, { capabilities: {} });
    const transport = this.createTransport();
    client.onclose = () => this.lost(client, undefined);
    client.onerror = (error) => {
      this.logger.debug({ err: error }, 'MCP transport error');
      // The HTTP transport gave up resuming a response stream: the answers on it will never come. The SDK
      // says so only in this message; closing the client fails the calls waiting on it at once.
      if (/maximum reconnection attempts/i.test(error.message)) this.lost(client, error);
    };
    try {
      await client.connect(transport, { timeout: this.options.connectTimeoutMs });
      if (client.getServerCapabilities()?.tools?.listChanged) {
        client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
          void this.relist(client);
        });
      }
      const tools = await this.listAll(client);
      if (this.closing) throw new Error('closed while connecting');
      this.client = client;
      this.connected = true;
      this.failedAttempts = 0;
      this.listedTools = tools;
    } catch (error) {
      client.onclose = undefined;
      await client.close().catch(() => undefined);
      throw error;
    }
  }

  private createTransport(): Transport {
    const { config } = this;
    if (config.url !== undefined) {
      return new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: { ...config.headers } },
        // A dropped response stream is resumed twice, quickly, before the calls on it count as cut.
        reconnectionOptions: {
          initialReconnectionDelay: 250,
          maxReconnectionDelay: 2_000,
          reconnectionDelayGrowFactor: 2,
          maxRetries: 2,
        },
      });
    }
    const transport = new StdioClientTransport({
      command: config.command!,
      ...(config.args ? { args: config.args } : {}),
      // The SDK adds only its safe defaults (PATH, HOME, USER…): the worker's secrets stay in the worker.
      env: { ...config.env },
      ...(config.cwd ? { cwd: config.cwd } : {}),
      stderr: 'pipe',
    });
    // A PassThrough the SDK creates at once for 'pipe', so nothing the child prints early is lost.
    const stderr = transport.stderr;
    if (stderr instanceof Readable) {
      createInterface({ input: stderr }).on('line', (line) => {
        this.logger.info({ stderr: line.slice(0, STDERR_LINE_MAX) }, 'MCP server stderr');
      });
    }
    return transport;
  }

  private async listAll(client: Client): Promise<McpTool[]> {
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const result = await client.listTools(cursor === undefined ? {} : { cursor }, {
        timeout: this.options.connectTimeoutMs,
      });
      tools.push(...result.tools);
      cursor = result.nextCursor;
      if (cursor === undefined) return tools;
    }
    this.logger.warn({ pages: MAX_LIST_PAGES }, 'MCP server keeps paging its tool list; the rest is ignored');
    return tools;
  }

  private async relist(client: Client): Promise<void> {
    try {
      const tools = await this.listAll(client);
      if (client !== this.client) return;
      this.listedTools = tools;
      this.onToolsListed?.(tools);
    } catch (error) {
      this.logger.warn({ err: error }, 'listing the MCP server’s tools again failed');
    }
  }

  /** The connection of `client` is gone: forget it and reconnect, unless it is stale or we are closing. */
  private lost(client: Client, error: unknown): void {
    if (client !== this.client) return;
    this.client = undefined;
    this.connected = false;
    client.onclose = undefined;
    void client.close().catch(() => undefined);
    if (this.closing) return;
    this.logger.warn(error === undefined ? {} : { err: error }, 'MCP server connection lost; reconnecting');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    const { reconnectBaseDelayMs, reconnectMaxDelayMs } = this.options;
    const delay = retryDelayMs(
      { baseMs: reconnectBaseDelayMs, maxMs: reconnectMaxDelayMs },
      this.failedAttempts + 1,
    );
    this.reconnectTimer = setTimeout(
      () => {
        this.connect().then(
          () => {
            this.logger.info({ tools: this.listedTools.length }, 'MCP server reconnected');
            this.onToolsListed?.(this.listedTools);
          },
          (error: unknown) => {
            if (this.closing) return;
            this.failedAttempts++;
            this.logger.warn({ err: error, attempt: this.failedAttempts }, 'MCP server reconnect failed');
            this.scheduleReconnect();
          },
        );
      },
      delay * (0.75 + Math.random() / 4),
    );
    this.reconnectTimer.unref();
  }
}

/**
 * How a call failed for want of a connection: `not_sent` when the server cannot have acted on it (nothing
 * listening, a session it no longer knows, no connection at all), `maybe_processed` when the request may
 * have reached it (the connection dropped, a 5xx from a proxy in front). Undefined: not a transport failure.
 */
function transportFailure(error: unknown): 'not_sent' | 'maybe_processed' | undefined {
  if (error instanceof StreamableHTTPError) {
    if (error.code === 404) return 'not_sent';
    return error.code !== undefined && error.code >= 500 ? 'maybe_processed' : undefined;
  }
  if (error instanceof McpError)
    return error.code === ErrorCode.ConnectionClosed ? 'maybe_processed' : undefined;
  // fetch's "fetch failed": the reason is in its cause (an AggregateError when several addresses failed).
  if (error instanceof TypeError) {
    const cause = error.cause as { code?: unknown; errors?: { code?: unknown }[] } | undefined;
    const codes = [cause?.code, ...(cause?.errors ?? []).map((inner) => inner.code)];
    return codes.some((code) => typeof code === 'string' && NOT_CONNECTED_CODES.has(code))
      ? 'not_sent'
      : 'maybe_processed';
  }
  // The SDK's own "Not connected": the transport was gone before the request was written.
  return error instanceof Error && /not connected/i.test(error.message) ? 'not_sent' : undefined;
}

function messageOf(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return `${error.message}${cause}`;
  }
  return String(error);
}
