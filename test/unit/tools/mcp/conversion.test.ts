// Converting a listed MCP tool into a fleet tool and its result into an observation, without a server:
// names, schemas zod cannot express, long descriptions, and the rendering of every kind of content.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../../src/logging/logger.js';
import { McpConnection } from '../../../../src/tools/mcp/mcp-connection.js';
import { renderMcpResult } from '../../../../src/tools/mcp/mcp-result-text.js';
import { mcpToolToFleetTool } from '../../../../src/tools/mcp/mcp-tool.js';
import { fleetToolName } from '../../../../src/tools/mcp/mcp-tool-name.js';

const logger = createLogger('mcp-unit', 'silent');
// Never started: conversion does no I/O.
const connection = new McpConnection({ name: 'srv', command: 'unused' }, logger, {
  connectTimeoutMs: 1,
  reconnectBaseDelayMs: 1,
  reconnectMaxDelayMs: 1,
});

describe('tool names', () => {
  it('prefixes, cleans characters a function name cannot hold, and refuses names over 64', () => {
    expect(fleetToolName('kpi', 'get.totals/v2')).toBe('kpi_get_totals_v2');
    expect(fleetToolName('', 'echo')).toBe('echo');
    expect(fleetToolName('p', 'x'.repeat(62))).toHaveLength(64);
    expect(fleetToolName('p', 'x'.repeat(63))).toBeUndefined();
  });
});

describe('schemas', () => {
  it('a schema zod cannot express still reaches the model as it is; the server validates alone', () => {
    const inputSchema = { type: 'object' as const, properties: { a: { not: { type: 'string' } } } };
    const tool = mcpToolToFleetTool('srv_odd', { name: 'odd', inputSchema }, connection, logger);
    expect(tool.inputJsonSchema).toEqual(inputSchema);
    expect(tool.parameters.safeParse({ a: 'anything' }).success).toBe(true);
    expect(tool.parameters.safeParse('not an object').success).toBe(false);
  });

  it('cuts a very long description and defaults to side effects whatever the annotations say', () => {
    const tool = mcpToolToFleetTool(
      'srv_long',
      {
        name: 'long',
        description: 'd'.repeat(5_000),
        inputSchema: { type: 'object' },
        annotations: { readOnlyHint: true },
      },
      connection,
      logger,
    );
    expect(tool.description.length).toBeLessThanOrEqual(2_001);
    expect(tool.readOnly).toBeUndefined();
    expect(tool.inputJsonSchema).toEqual({ type: 'object', properties: {} });
  });
});

describe('results', () => {
  it('joins text, summarises binary content, and keeps within the limit', () => {
    expect(
      renderMcpResult({
        content: [
          { type: 'text', text: 'one' },
          { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' },
          { type: 'resource_link', uri: 'https://x/y', name: 'y' },
          { type: 'resource', resource: { uri: 'file:///a.txt', text: 'inline' } },
        ],
      }),
    ).toBe('one\n[audio audio/wav, 3 bytes]\n[resource link https://x/y]\n[resource file:///a.txt]\ninline');
    const big = renderMcpResult({ content: [{ type: 'text', text: 'x'.repeat(10_000) }] }, 100);
    expect(big.length).toBe(100);
    expect(big).toMatch(/x …\[cut at 100 chars\]$/);
    expect(renderMcpResult({ content: [] })).toBe('OK');
    expect(renderMcpResult({ content: [], isError: true })).toBe('The tool failed without saying why.');
  });
});
