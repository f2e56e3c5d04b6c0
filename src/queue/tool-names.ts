// The built-in tools' names (docs/tool-safety.md). A task may name a subset; the worker builds the registry from them.
export const TOOL_NAMES = ['sql_query', 'list_tables', 'describe_table', 'send_email'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];
