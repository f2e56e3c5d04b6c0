// What a fleet configuration says about one MCP server, checked before anything connects: exactly one of
// `command` (a child process over stdio) or `url` (Streamable HTTP), and errors that name the field.
import { z } from 'zod';
import { ConfigError } from '../../kernel/errors.js';
import type { McpServerConfig } from '../../kernel/define-fleet.js';

// The configuration type is the kernel's (defineFleet's `mcpServers`); this module validates it.
export type { McpServerConfig };

export const MCP_DEFAULT_TIMEOUT_MS = 30_000;

/** Letters, digits, `_` and `-`: what a tool name may hold (the OpenAI function-name pattern). */
const NAME_PART = /^[a-zA-Z0-9_-]*$/;

const serverSchema = z
  .strictObject({
    name: z.string().min(1).max(40).regex(NAME_PART, 'only letters, digits, "_" and "-"'),
    command: z.string().min(1).optional(),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().min(1).optional(),
    url: z.url({ protocol: /^https?$/, error: 'an http:// or https:// URL' }).optional(),
    headers: z.record(z.string(), z.string()).optional(),
    readOnly: z.union([z.boolean(), z.array(z.string().min(1))]).optional(),
    timeoutMs: z.number().int().positive().max(3_600_000).optional(),
    toolPrefix: z.string().max(40).regex(NAME_PART, 'only letters, digits, "_" and "-"').optional(),
  })
  .superRefine((server, ctx) => {
    if (server.command === undefined && server.url === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['command'],
        message: 'set either command (stdio) or url (HTTP)',
      });
    }
    if (server.command !== undefined && server.url !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['url'], message: 'set either command or url, not both' });
    }
    const stdioOnly = (['args', 'env', 'cwd'] as const).filter((key) => server[key] !== undefined);
    if (server.url !== undefined) {
      for (const key of stdioOnly) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'only for a stdio server (command)' });
      }
    }
    if (server.command !== undefined && server.headers !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['headers'], message: 'only for an HTTP server (url)' });
    }
  });

/**
 * The servers, checked: throws one ConfigError naming the first bad field (`mcpServers[1].url: …`), or a
 * name used twice.
 */
export function validateMcpServers(servers: readonly unknown[]): McpServerConfig[] {
  const seen = new Set<string>();
  return servers.map((server, index) => {
    const parsed = serverSchema.safeParse(server);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = [`mcpServers[${index}]`, ...issue.path.map(String)].join('.');
      throw new ConfigError('bad_mcp_server', `${field}: ${issue.message}`);
    }
    if (seen.has(parsed.data.name)) {
      throw new ConfigError(
        'bad_mcp_server',
        `mcpServers[${index}].name: "${parsed.data.name}" names two servers`,
      );
    }
    seen.add(parsed.data.name);
    return parsed.data;
  });
}
