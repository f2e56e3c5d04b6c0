// How tests configure the test MCP server over stdio (test/fixtures/mcp-stdio-server.ts).
import type { McpServerConfig } from '../../src/tools/mcp/load-mcp-tools.js';

export const stdioServer = (overrides: Partial<McpServerConfig> = {}): McpServerConfig => ({
  name: 'local',
  command: process.execPath,
  args: ['--import', 'tsx', 'test/fixtures/mcp-stdio-server.ts'],
  env: { TEAM_SETTING: 'blue' },
  ...overrides,
});
