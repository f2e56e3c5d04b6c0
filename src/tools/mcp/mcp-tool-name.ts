// The fleet's name for an MCP tool: `${prefix}_${tool}` so two servers (or a server and a built-in tool) can
// offer the same name, in the characters a function name may hold (^[a-zA-Z0-9_-]{1,64}$).
const MAX_NAME = 64;

/** The fleet name, or undefined when it cannot be one (too long even after cleaning). */
export function fleetToolName(prefix: string, mcpName: string): string | undefined {
  // MCP allows a few more characters (`.`, `/`); they become `_`.
  const cleaned = mcpName.replace(/[^a-zA-Z0-9_-]/g, '_');
  const name = prefix === '' ? cleaned : `${prefix}_${cleaned}`;
  return name.length >= 1 && name.length <= MAX_NAME ? name : undefined;
}
