// Scenarios 2 and 3 together: measured batches of agent steps alternate with replays of their own model
// calls by the bare loop, so each agent figure has a floor measured seconds apart under the same machine load.
import { log } from '../lib/fleet.js';
import { median, spread } from '../lib/stats.js';
import {
  AgentStepsSession,
  workerToolsFrom,
  type AgentStepsBatch,
  type AgentStepsOptions,
} from './agent-steps.js';
import { FloorSession, type FloorBatch } from './floor.js';

export interface StepsAndFloorResult {
  concurrency: number;
  stepsPerTask: number;
  tasksPerBatch: number;
  workerTools: string | null;
  /** Medians over the batches. */
  steps: Pick<AgentStepsBatch, AgentStepsFigure> & {
    cpuSpread: number;
    batches: AgentStepsBatch[];
  };
  /** The `openai` client with its own transport: the baseline of the target. */
  floor: FloorSummary;
  /** The same loop over the worker's transport. */
  floorWorkerTransport: FloorSummary;
  /** Median of (agent CPU per step / floor CPU per call) over adjacent pairs. */
  cpuRatio: number;
  pairRatios: number[];
  /** The same over the floor on the worker's transport: what queue, store and kernel add to the very same call. */
  cpuRatioSameTransport: number;
  unexpected: Record<string, number>;
}

type FloorSummary = Pick<FloorBatch, 'callsPerSecond' | 'cpuMsPerCall' | 'readsPerCall' | 'writesPerCall'> & {
  cpuSpread: number;
  batches: FloorBatch[];
};

const summarize = (batches: FloorBatch[]): FloorSummary => ({
  callsPerSecond: median(batches.map((b) => b.callsPerSecond)),
  cpuMsPerCall: median(batches.map((b) => b.cpuMsPerCall)),
  readsPerCall: median(batches.map((b) => b.readsPerCall)),
  writesPerCall: median(batches.map((b) => b.writesPerCall)),
  cpuSpread: spread(batches.map((b) => b.cpuMsPerCall)),
  batches,
});

type AgentStepsFigure =
  | 'stepsPerSecond'
  | 'workerCpuMsPerStep'
  | 'workerCpuShare'
  | 'workerReadsPerStep'
  | 'workerWritesPerStep'
  | 'modelServerCpuMsPerCall'
  | 'redisCpuMsPerStep'
  | 'mysqlCpuMsPerStep';

const medianOrNull = (values: (number | null)[]) =>
  values.some((v) => v === null) ? null : median(values as number[]);

export async function stepsAndFloor(
  options: AgentStepsOptions & { repetitions: number; floorWarmupReplays: number },
): Promise<StepsAndFloorResult> {
  const session = await AgentStepsSession.start(options);
  let floor: FloorSession | undefined;
  try {
    floor = await FloorSession.start({
      concurrency: options.concurrency,
      tool: options.tool,
      callsPerSignal: options.steps,
    });
    const stepBatches: AgentStepsBatch[] = [];
    const floorBatches: FloorBatch[] = [];
    const sameTransportBatches: FloorBatch[] = [];
    let workerTools: string | null = null;
    for (let rep = 0; rep < options.repetitions; rep++) {
      const { batch, bodies } = await session.measure();
      stepBatches.push(batch);
      workerTools ??= workerToolsFrom(bodies);
      // The worker was warmed up by as many calls as a batch makes several times over; so is the loop.
      if (rep === 0) for (let i = 0; i < options.floorWarmupReplays; i++) await floor.warmUp(bodies);
      floorBatches.push(await floor.measure(bodies, 'client-default'));
      sameTransportBatches.push(await floor.measure(bodies, 'worker'));
    }
    const ratiosTo = (floors: FloorBatch[]) =>
      stepBatches.map((s, i) => s.workerCpuMsPerStep / floors[i]!.cpuMsPerCall);
    const pairRatios = ratiosTo(floorBatches);
    const unexpected: Record<string, number> = {};
    for (const b of stepBatches)
      for (const [k, v] of Object.entries(b.check.unexpected)) unexpected[k] = (unexpected[k] ?? 0) + v;
    const errors = [...floorBatches, ...sameTransportBatches].reduce((sum, b) => sum + b.errors, 0);
    if (errors > 0) log(`floor: ${errors} calls failed`);
    return {
      concurrency: options.concurrency,
      stepsPerTask: options.steps,
      tasksPerBatch: options.tasks,
      workerTools,
      steps: {
        stepsPerSecond: median(stepBatches.map((b) => b.stepsPerSecond)),
        workerCpuMsPerStep: median(stepBatches.map((b) => b.workerCpuMsPerStep)),
        workerCpuShare: median(stepBatches.map((b) => b.workerCpuShare)),
        workerReadsPerStep: median(stepBatches.map((b) => b.workerReadsPerStep)),
        workerWritesPerStep: median(stepBatches.map((b) => b.workerWritesPerStep)),
        modelServerCpuMsPerCall: median(stepBatches.map((b) => b.modelServerCpuMsPerCall)),
        redisCpuMsPerStep: medianOrNull(stepBatches.map((b) => b.redisCpuMsPerStep)),
        mysqlCpuMsPerStep: medianOrNull(stepBatches.map((b) => b.mysqlCpuMsPerStep)),
        cpuSpread: spread(stepBatches.map((b) => b.workerCpuMsPerStep)),
        batches: stepBatches,
      },
      floor: summarize(floorBatches),
      floorWorkerTransport: summarize(sameTransportBatches),
      cpuRatio: median(pairRatios),
      pairRatios,
      cpuRatioSameTransport: median(ratiosTo(sameTransportBatches)),
      unexpected,
    };
  } finally {
    await floor?.close();
    await session.close();
  }
}
