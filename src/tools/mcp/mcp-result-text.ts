// What the model observes of an MCP tool result: text parts joined, structured content as JSON when there
// is no text, and images, audio and resources summarised by type and size (never their bytes). Bounded.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { TOOL_OUTPUT_MAX_CHARS } from '../../kernel/defaults.js';
import { boundedJson } from '../../kernel/bounded-json.js';

export function renderMcpResult(result: CallToolResult, maxChars = TOOL_OUTPUT_MAX_CHARS): string {
  const parts: string[] = [];
  let length = 0;
  // Parts are kept only while they fit: a huge result costs no more than maxChars of text here.
  const add = (part: string) => {
    if (length > maxChars) return;
    const kept = part.length > maxChars ? part.slice(0, maxChars + 1) : part;
    parts.push(kept);
    length += kept.length + 1;
  };
  const content = Array.isArray(result.content) ? result.content : [];
  for (const block of content) add(describeBlock(block));
  const hasText = content.some((block) => block.type === 'text');
  if (!hasText && result.structuredContent !== undefined) {
    add(boundedJson(result.structuredContent, maxChars + 1).text);
  }
  if (parts.length === 0) return result.isError ? 'The tool failed without saying why.' : 'OK';
  const text = parts.join('\n');
  if (text.length <= maxChars) return text;
  const marker = ` …[cut at ${maxChars} chars]`;
  return `${text.slice(0, Math.max(maxChars - marker.length, 0))}${marker}`;
}

function describeBlock(block: CallToolResult['content'][number]): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
    case 'audio':
      return `[${block.type} ${block.mimeType}, ${base64Bytes(block.data)} bytes]`;
    case 'resource_link':
      return `[resource link ${block.uri}${block.mimeType ? ` (${block.mimeType})` : ''}]`;
    case 'resource': {
      const resource = block.resource;
      const type = resource.mimeType ? ` (${resource.mimeType})` : '';
      if ('text' in resource && typeof resource.text === 'string') {
        return `[resource ${resource.uri}${type}]\n${resource.text}`;
      }
      const blob = 'blob' in resource && typeof resource.blob === 'string' ? resource.blob : '';
      return `[resource ${resource.uri}${type}, ${base64Bytes(blob)} bytes]`;
    }
    default:
      return `[${String((block as { type?: unknown }).type)} content]`;
  }
}

/** Decoded size of base64 text, without decoding it. */
function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(Math.floor((data.length * 3) / 4) - padding, 0);
}
