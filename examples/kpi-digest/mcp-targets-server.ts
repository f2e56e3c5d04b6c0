// A tiny MCP server over stdio, written with the official SDK: one tool, `lookup`, with a region's weekly
// targets. The fleet configuration starts it as a child process; the agent sees the tool as `targets_lookup`.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { REGIONS, targetsFor } from './kpi-data.js';

const server = new McpServer({ name: 'kpi-targets', version: '1.0.0' });

server.registerTool(
  'lookup',
  {
    description: "A region's weekly revenue and order targets.",
    inputSchema: { region: z.enum(REGIONS) },
  },
  async ({ region }) => ({ content: [{ type: 'text', text: JSON.stringify(targetsFor(region)) }] }),
);

await server.connect(new StdioServerTransport());
