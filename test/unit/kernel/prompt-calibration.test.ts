// The prompt estimate's calibration from reported usage: it only ever rises, stays within its bounds, and scales
// the estimate by the larger of a ratio and an excess per tool call.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  PROMPT_ESTIMATE_MARGIN,
  PROMPT_ESTIMATE_SLACK_TOKENS,
  PROMPT_EXTRA_PER_TOOL_CALL_MAX,
  PROMPT_EXTRA_PER_TOOL_CALL_UNSEEN,
  PROMPT_RATIO_MAX,
} from '../../../src/kernel/defaults.js';
import type { ChatMessage } from '../../../src/kernel/messages.js';
import { measurePrompt, PromptCalibration, UNCALIBRATED } from '../../../src/kernel/prompt-calibration.js';
import { countPromptTokensBound, tokenCounterFor } from '../../../src/kernel/tokens.js';

const withMargin = (tokens: number) =>
  Math.ceil(tokens * (1 + PROMPT_ESTIMATE_MARGIN)) + PROMPT_ESTIMATE_SLACK_TOKENS;

describe('measurePrompt', () => {
  it('is the bound of the prompt and the tool calls of its history', () => {
    const count = tokenCounterFor('gpt-4o');
    const messages: ChatMessage[] = [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'a', arguments: '{}' } },
          { id: 'call_2', type: 'function', function: { name: 'b', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'x' },
      { role: 'tool', tool_call_id: 'call_2', content: 'y' },
    ];
    expect(measurePrompt(messages, undefined, count)).toEqual({
      bound: countPromptTokensBound(messages, undefined, count),
      toolCalls: 2,
    });
  });
});

describe('PromptCalibration', () => {
  it('uncalibrated, the estimate is the bound plus the margin, and a few tokens a tool call', () => {
    const calibration = new PromptCalibration();
    expect(calibration.state).toEqual(UNCALIBRATED);
    expect(calibration.estimate({ bound: 1_000, toolCalls: 0 })).toBe(withMargin(1_000));
    expect(calibration.estimate({ bound: 1_000, toolCalls: 5 })).toBe(
      withMargin(1_000 + 5 * PROMPT_EXTRA_PER_TOOL_CALL_UNSEEN),
    );
  });

  it('plans tool calls with a few tokens more until a reported prompt had some, whatever it reported', () => {
    const calibration = new PromptCalibration();
    // A report of a prompt without tool calls says nothing of how the endpoint counts them.
    calibration.observe({ bound: 400, toolCalls: 0 }, 400);
    expect(calibration.estimate({ bound: 400, toolCalls: 5 })).toBe(
      withMargin(400 + 5 * PROMPT_EXTRA_PER_TOOL_CALL_UNSEEN),
    );
    // One with tool calls, counted as documented: from then on the bound alone.
    calibration.observe({ bound: 500, toolCalls: 3 }, 500);
    expect(calibration.state).toEqual({ ratio: 1, extraPerToolCall: 0, toolCallsReported: true });
    expect(calibration.estimate({ bound: 400, toolCalls: 5 })).toBe(withMargin(400));
    // A checkpoint's copy, and one written before the flag was kept (planned as unseen).
    expect(
      new PromptCalibration(JSON.parse(JSON.stringify(calibration.state))).estimate({
        bound: 400,
        toolCalls: 5,
      }),
    ).toBe(withMargin(400));
    expect(
      new PromptCalibration({ ratio: 1, extraPerToolCall: 0 }).estimate({ bound: 400, toolCalls: 5 }),
    ).toBe(withMargin(400 + 5 * PROMPT_EXTRA_PER_TOOL_CALL_UNSEEN));
  });

  it('learns the worst ratio and the worst excess per tool call, and scales by the larger', () => {
    const calibration = new PromptCalibration();
    calibration.observe({ bound: 1_000, toolCalls: 0 }, 1_030);
    expect(calibration.state).toEqual({ ratio: 1.03, extraPerToolCall: 0 });
    calibration.observe({ bound: 500, toolCalls: 4 }, 540);
    expect(calibration.state).toEqual({ ratio: 1.08, extraPerToolCall: 10, toolCallsReported: true });
    // 1.08 × 1000 = 1080 against 1000 + 2 × 10: the ratio.
    expect(calibration.estimate({ bound: 1_000, toolCalls: 2 })).toBe(withMargin(1_080));
    // 1.08 × 400 = 432 against 400 + 6 × 10 = 460: the calls.
    expect(calibration.estimate({ bound: 400, toolCalls: 6 })).toBe(withMargin(460));
  });

  it('never falls: a report at or below the bound changes nothing', () => {
    const calibration = new PromptCalibration({ ratio: 1.05, extraPerToolCall: 3 });
    calibration.observe({ bound: 1_000, toolCalls: 10 }, 900);
    calibration.observe({ bound: 1_000, toolCalls: 10 }, 1_000);
    calibration.observe({ bound: 1_000, toolCalls: 10 }, 1_010);
    expect(calibration.state).toEqual({ ratio: 1.05, extraPerToolCall: 3, toolCallsReported: true });
  });

  it('is bounded: one odd report cannot make every later prompt look unaffordable', () => {
    const calibration = new PromptCalibration();
    calibration.observe({ bound: 100, toolCalls: 1 }, 100_000);
    expect(calibration.state).toEqual({
      ratio: PROMPT_RATIO_MAX,
      extraPerToolCall: PROMPT_EXTRA_PER_TOOL_CALL_MAX,
      toolCallsReported: true,
    });
  });

  it('ignores reports it cannot use, and repairs a damaged state', () => {
    const calibration = new PromptCalibration();
    calibration.observe({ bound: 0, toolCalls: 0 }, 50);
    calibration.observe({ bound: 100, toolCalls: 1 }, Number.NaN);
    expect(calibration.state).toEqual(UNCALIBRATED);
    expect(new PromptCalibration({ ratio: Number.NaN, extraPerToolCall: -4 }).state).toEqual(UNCALIBRATED);
    expect(new PromptCalibration({ ratio: 0.5, extraPerToolCall: 1e9 }).state).toEqual({
      ratio: 1,
      extraPerToolCall: PROMPT_EXTRA_PER_TOOL_CALL_MAX,
    });
  });

  it('once a prompt was reported, the same prompt is estimated at or above the report (property)', () => {
    const size = fc.record({
      bound: fc.integer({ min: 1, max: 100_000 }),
      toolCalls: fc.integer({ min: 0, max: 50 }),
    });
    fc.assert(
      fc.property(fc.array(fc.tuple(size, fc.double({ min: 0.5, max: 1.4, noNaN: true }))), (reports) => {
        const calibration = new PromptCalibration();
        for (const [prompt, ratio] of reports) {
          const reported = Math.round(prompt.bound * ratio);
          calibration.observe(prompt, reported);
          expect(calibration.estimate(prompt)).toBeGreaterThanOrEqual(reported);
        }
        // A checkpoint's copy estimates the same.
        const resumed = new PromptCalibration(JSON.parse(JSON.stringify(calibration.state)));
        for (const [prompt] of reports) expect(resumed.estimate(prompt)).toBe(calibration.estimate(prompt));
      }),
      { numRuns: 300 },
    );
  });
});
