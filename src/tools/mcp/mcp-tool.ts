// An MCP tool as one of the fleet's tools: the server's JSON Schema sent to the model as it is and turned
// into zod so the kernel refuses bad arguments before the call; the result rendered as an observation;
// `isError` results and protocol errors are observations; a lost connection is transient for a read-only
// tool, and an uncertain outcome for one with side effects (the server may have acted before it went away).
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { ToolError, TransientToolError } from '../../kernel/errors.js';
import type { Logger } from '../../logging/logger.js';
import { UncertainOutcome, type Tool } from '../../kernel/tool.js';
import { McpCallInterrupted, type McpConnection } from './mcp-connection.js';
import { renderMcpResult } from './mcp-result-text.js';
import { MCP_DEFAULT_TIMEOUT_MS, type McpServerConfig } from './mcp-server-config.js';

/** An untrusted server's description goes into every prompt: cut it to a sane length. */
const MAX_DESCRIPTION_CHARS = 2_000;

export function mcpToolToFleetTool(
  name: string,
  listed: McpTool,
  connection: McpConnection,
  logger: Logger,
): Tool {
  const config = connection.config;
  const readOnly = isReadOnly(config, listed.name);
  const timeoutMs = config.timeoutMs ?? MCP_DEFAULT_TIMEOUT_MS;
  const jsonSchema = objectSchema(listed.inputSchema);
  return {
    name,
    description: describe(listed, config),
    parameters: validatorFor(jsonSchema, name, logger),
    inputJsonSchema: jsonSchema,
    timeoutMs,
    ...(readOnly ? { readOnly: true } : {}),
    async execute(args, ctx) {
      if (!connection.tools.some((tool) => tool.name === listed.name)) {
        throw new ToolError('mcp_tool_gone', `MCP server "${config.name}" no longer offers ${listed.name}`);
      }
      try {
        const result = await connection.callTool(listed.name, args as Record<string, unknown>, {
          signal: ctx.signal,
          timeoutMs,
          callKey: ctx.callKey,
        });
        const text = renderMcpResult(result);
        if (result.isError) throw new ToolError('mcp_tool_error', text);
        return text;
      } catch (error) {
        if (error instanceof McpCallInterrupted) {
          if (readOnly)
            throw new TransientToolError(error.message, { code: 'mcp_unavailable', cause: error });
          return new UncertainOutcome(
            `${error.message} during the call: whether ${name} took effect is unknown. Do not repeat it blindly.`,
            { what: `${name} call`, why: error.message },
          );
        }
        if (error instanceof ToolError || ctx.signal.aborted) throw error;
        // A protocol error (unknown tool, invalid params): the model reads it and may fix the call.
        throw new ToolError('mcp_error', error instanceof Error ? error.message : String(error));
      }
    },
  };
}

/**
 * Read-only only when the configuration says so. A server's `readOnlyHint` annotation is a claim by the
 * server, which the fleet does not trust: it is shown to nobody and decides nothing.
 */
function isReadOnly(config: McpServerConfig, mcpName: string): boolean {
  if (config.readOnly === true) return true;
  return Array.isArray(config.readOnly) && config.readOnly.includes(mcpName);
}

function describe(listed: McpTool, config: McpServerConfig): string {
  const text = listed.description ?? listed.title ?? `${listed.name} (MCP server ${config.name})`;
  return text.length > MAX_DESCRIPTION_CHARS ? `${text.slice(0, MAX_DESCRIPTION_CHARS)}…` : text;
}

/** A function's parameters must be an object schema; MCP says so too, but a server may omit `type`. */
function objectSchema(inputSchema: McpTool['inputSchema']): Record<string, unknown> {
  const schema: Record<string, unknown> = { ...inputSchema, type: 'object' };
  delete schema.$schema;
  schema.properties ??= {};
  return schema;
}

/**
 * zod from the JSON Schema, so required fields, nested objects and enums are checked before the call. A
 * schema zod cannot express (`not`, some `$ref`s) is checked by the server alone.
 */
function validatorFor(jsonSchema: Record<string, unknown>, name: string, logger: Logger): z.ZodType {
  try {
    return z.fromJSONSchema(jsonSchema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (error) {
    logger.warn(
      { tool: name, reason: error instanceof Error ? error.message : String(error) },
      'MCP tool schema has parts zod cannot check; the server validates its arguments alone',
    );
    return z.looseObject({});
  }
}
