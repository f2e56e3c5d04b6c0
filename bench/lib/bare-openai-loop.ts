// The baseline of the cost scenario: the loop a user writes with the `openai` package and nothing else. The
// same system prompt and tool definitions as the kernel, every message appended as it came, every tool's
// output sent back whole, no prompt_cache_key, until the model answers or `maxCalls` calls are made.
import OpenAI from 'openai';
import type { ToolRegistry } from '../../src/kernel/tool-registry.js';

export interface BareRun {
  answer: string | null;
  calls: number;
  toolCalls: number;
}

export async function bareOpenAiLoop(options: {
  baseURL: string;
  model: string;
  system: string;
  task: string;
  tools: ToolRegistry;
  maxCalls: number;
  maxTokens: number;
  temperature: number;
}): Promise<BareRun> {
  const client = new OpenAI({ apiKey: 'bench', baseURL: options.baseURL, maxRetries: 0 });
  const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
    { role: 'system', content: options.system },
    { role: 'user', content: options.task },
  ];
  const tools = options.tools.specs as OpenAI.Chat.Completions.ChatCompletionTool[];
  let toolCalls = 0;
  for (let call = 1; call <= options.maxCalls; call++) {
    const response = await client.chat.completions.create({
      model: options.model,
      messages,
      tools,
      max_tokens: options.maxTokens,
      temperature: options.temperature,
    });
    const message = response.choices[0]!.message;
    const calls = (message.tool_calls ?? []).filter((c) => c.type === 'function');
    if (calls.length === 0) return { answer: message.content, calls: call, toolCalls };
    messages.push({ role: 'assistant', content: message.content, tool_calls: calls });
    for (const c of calls) {
      toolCalls++;
      const tool = options.tools.get(c.function.name);
      let output: string;
      try {
        if (!tool) throw new Error(`unknown tool ${c.function.name}`);
        const args = tool.parameters.parse(JSON.parse(c.function.arguments || '{}'));
        const result = await tool.execute(args, {
          signal: AbortSignal.timeout(15_000),
          runId: 'bare',
          callKey: `bare:${call}:${c.id}`,
          step: call,
          once: (effect) => effect(),
        });
        output = typeof result === 'string' ? result : JSON.stringify(result);
      } catch (error) {
        output = `Error: ${error instanceof Error ? error.message : String(error)}`;
      }
      messages.push({ role: 'tool', tool_call_id: c.id, content: output });
    }
  }
  return { answer: null, calls: options.maxCalls, toolCalls };
}
