// The commands of `agent-fleet`: each runs the module its npm script runs, compiled (docs/commands.md). One row
// a command: what it runs, how it takes its arguments, and the help it answers without loading anything (so
// `agent-fleet <command> --help` needs no Redis, MySQL or environment).

/** How a command takes arguments: none (the environment configures it), `--config FILE`, or all of them. */
export type ArgumentPolicy = 'none' | 'config' | 'pass';

export interface CommandRow {
  /** Relative to bin/, as the dynamic import in agent-fleet.ts resolves it. */
  module: string;
  arguments: ArgumentPolicy;
  /** The command's line in the bin's usage. */
  synopsis: string;
  /** What `agent-fleet <command> --help` prints; absent: the module answers --help itself. */
  help?: string;
}

export const COMMANDS = {
  worker: {
    module: '../workers/agent-worker.js',
    arguments: 'config',
    synopsis: 'worker [--config FILE] [--processes N|auto]   one worker process, or N under a supervisor',
    help:
      'usage: agent-fleet worker [--config FILE] [--processes N|auto]\n\n' +
      'One worker process: migrates the store, serves the fleet configuration FILE (default FLEET_CONFIG, else\n' +
      './agent-fleet.config.js when present, else the built-in demo fleet) and runs its tasks until SIGTERM.\n' +
      '--processes N (1-64, or auto: one per core): N such processes under one supervisor, which restarts a\n' +
      'crashed one with backoff, gives each the metrics port METRICS_PORT + its index, and passes SIGTERM on.\n',
  },
  enqueue: {
    module: '../producers/cli.js',
    arguments: 'pass',
    synopsis: 'enqueue --task "…" …     enqueue a task or a batch (agent-fleet enqueue --help)',
  },
  api: {
    module: '../producers/api.js',
    arguments: 'none',
    synopsis: 'api                      the HTTP API on API_PORT',
    help: 'usage: agent-fleet api\n\nThe HTTP API on API_HOST:API_PORT (default 127.0.0.1:3100), behind API_TOKEN.\n',
  },
  board: {
    module: '../producers/board.js',
    arguments: 'none',
    synopsis: 'board                    Bull Board and the run console on BOARD_PORT',
    help:
      'usage: agent-fleet board\n\nBull Board and the run console (/console/runs) on BOARD_HOST:BOARD_PORT ' +
      '(default 127.0.0.1:3200),\nbehind BOARD_USER and BOARD_PASSWORD.\n',
  },
  migrate: {
    module: '../scripts/migrate.js',
    arguments: 'none',
    synopsis: "migrate                  create or upgrade the store's schema",
    help: "usage: agent-fleet migrate\n\nCreates or upgrades the store's schema in MYSQL_URL; idempotent.\n",
  },
  scheduler: {
    module: '../workers/scheduler.js',
    arguments: 'none',
    synopsis: 'scheduler                register and fire the schedules without running tasks',
    help: 'usage: agent-fleet scheduler\n\nRegisters the schedules of SCHEDULES_FILE and fires them; runs no task.\n',
  },
  trace: {
    module: '../scripts/trace.js',
    arguments: 'pass',
    synopsis: "trace --job ID [--json]  a run's timeline, from MYSQL_URL",
    help:
      'usage: agent-fleet trace --job ID [--json]\n\n' +
      "A run's timeline (model calls, tool calls and observations, the answer) from MYSQL_URL (MYSQL_READ_URL when\n" +
      'set); --json: as JSON.\n',
  },
  report: {
    module: '../scripts/report.js',
    arguments: 'pass',
    synopsis: "report --batch ID [--out DIR]   a batch's report, written under DIR (reports/)",
    help:
      'usage: agent-fleet report --batch ID [--out DIR]\n\n' +
      "Prints a batch's report and writes it as Markdown, HTML and an SVG chart under DIR (default reports/).\n",
  },
  approvals: {
    module: '../scripts/approvals.js',
    arguments: 'pass',
    synopsis: 'approvals list | show ID | approve ID | reject ID   calls waiting for a decision',
    help:
      'usage: agent-fleet approvals <command>\n\n' +
      '  list [--state S] [--job ID] [--batch ID] [--tool T] [--json]   the approvals, newest first\n' +
      '  show ID                                                        one approval, as JSON\n' +
      "  approve ID [--arguments '{…}'] [--reason TEXT]                 approve a call (edited arguments)\n" +
      '  reject ID --reason TEXT                                        reject a call\n' +
      '  approve|reject --batch B --tool T [--reason TEXT]              every waiting call of a batch to T\n\n' +
      'Decides as shell:<user>, from MYSQL_URL; wakes the parked job on REDIS_URL / QUEUE_PREFIX.\n',
  },
  memory: {
    module: '../scripts/memory.js',
    arguments: 'pass',
    synopsis: 'memory list | show ID | forget ID   the notes agents keep across tasks',
    help:
      'usage: agent-fleet memory <command>\n\n' +
      '  list [--agent A] [--tenant T] [--limit N]   live notes, newest first: one JSON object a line\n' +
      '  show ID                                     one note, as JSON\n' +
      '  forget ID                                   remove one note\n' +
      '  forget --agent A [--tenant T]               remove every note of an agent (of one tenant)\n\n' +
      "From MYSQL_URL; --tenant '' names the notes of tasks without a tenant.\n",
  },
  schedules: {
    module: '../scripts/schedules.js',
    arguments: 'pass',
    synopsis: 'schedules list | sync | remove NAME   the registered schedules',
    help:
      'usage: agent-fleet schedules list | sync | remove NAME\n\n' +
      '  list    one JSON line per schedule: name, cron, time zone, next run\n' +
      "  sync    register SCHEDULES_FILE's schedules now, remove the ones gone from it\n" +
      '  remove  unregister one schedule now\n',
  },
  init: {
    module: './init.js',
    arguments: 'pass',
    synopsis:
      'init [DIR]               scaffold a fleet: a configuration, a scripted-model test, .env.example',
    help:
      'usage: agent-fleet init [DIR]\n\n' +
      'Writes into DIR (default: the current folder) a fleet configuration with one agent and one tool\n' +
      '(agent-fleet.config.js), its test against the scripted model (greeter.test.js, node --test), the\n' +
      'environment to set (.env.example) and, when DIR has none, a package.json. Overwrites nothing: if one\n' +
      'of these files exists, it names it and writes none.\n',
  },
} as const satisfies Record<string, CommandRow>;

export type BinCommandName = keyof typeof COMMANDS;

export function isCommand(name: string): name is BinCommandName {
  return Object.hasOwn(COMMANDS, name);
}
