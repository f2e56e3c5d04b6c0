// The project installed as another service installs it: `npm run build`, `npm pack`, the tarballs installed
// into empty folders outside the repository, and from there, in plain JavaScript with no TypeScript loader, a
// fleet configuration of its own (an agent with an input schema, a typed output and its own tool) served by a
// worker started from the bin, the scripted model server started from the installed testing entry, a task
// enqueued with the installed client package alone and its result read and checked against the result schema.
// Also from there: the built-in tools wired in plain JS, every bin command the docs name answering --help, the
// scaffold of `agent-fleet init` and the scripted-model example passing their own tests, and the README's links.
// The client package's tree is measured: bullmq, ioredis, zod and their dependencies, nothing of the fleet's
// adapters. Needs Redis, MariaDB and the npm cache (or registry) the repository was installed from.
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentResultSchema } from '../../../src/kernel/result-schema.js';
import { createNamespace, REDIS_URL, type FleetNamespace } from '../../support/fleet-harness.js';
import {
  buildAndPack,
  installInto,
  npm,
  REPOSITORY,
  runToEnd,
  start,
  type RunningProcess,
} from '../../support/installed-package.js';
import { FIXTURES_DIR } from '../../support/repo-paths.js';

const FIXTURES = join(FIXTURES_DIR, 'package');
const SETUP_MS = 480_000;
const ADAPTERS = [
  'mysql2',
  'express',
  'openai',
  'nodemailer',
  'smtp-server',
  'pino',
  '@bull-board/api',
  'mailparser',
];

let ns: FleetNamespace;
/** Of the tests that `agent-fleet init` scaffolds and of the scripted-model example: their own queues and stores. */
const ownTests: FleetNamespace[] = [];
let folder = '';
/** The whole project and the client package installed together, as a service running workers does. */
let app = '';
/** The client package alone, as a producer service does. */
let producer = '';
let model: RunningProcess;
let worker: RunningProcess;
const running: RunningProcess[] = [];
let typeCheck: Promise<{ code: number | null; stdout: string; stderr: string }>;

const bin = () => join(app, 'node_modules', '.bin', 'agent-fleet');
const fleetEnv = () => ({ REDIS_URL, QUEUE_PREFIX: ns.prefix, MYSQL_URL: ns.mysqlUrl, LOG_LEVEL: 'info' });

/** How long each step of the set-up took, printed once: where the time of this test goes. */
const phases: string[] = [];
async function timed<T>(phase: string, step: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const value = await step();
  phases.push(`${phase} ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return value;
}

beforeAll(async () => {
  ns = createNamespace('package');
  const packed = await timed('build and pack', buildAndPack);
  folder = packed.folder;
  app = join(folder, 'app');
  producer = join(folder, 'producer');
  await timed('install', () =>
    Promise.all([
      installInto(app, [packed.tarballs.project, packed.tarballs.client]),
      installInto(producer, [packed.tarballs.client]),
    ]),
  );
  for (const file of ['agent-fleet.config.js', 'model.js', 'consumer.ts', 'builtin-tools.js'])
    cpSync(join(FIXTURES, file), join(app, file));
  cpSync(join(FIXTURES, 'enqueue.js'), join(producer, 'enqueue.js'));

  // The declarations are checked as a consumer's compiler checks them (skipLibCheck off), meanwhile.
  const tsc = join(REPOSITORY, 'node_modules', 'typescript', 'bin', 'tsc');
  typeCheck = runToEnd(
    process.execPath,
    [
      tsc,
      '--noEmit',
      '--strict',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--target',
      'es2022',
    ].concat(
      [
        '--skipLibCheck',
        'false',
        '--types',
        'node',
        '--typeRoots',
        join(REPOSITORY, 'node_modules', '@types'),
      ],
      ['consumer.ts'],
    ),
    app,
    {},
    SETUP_MS,
  );

  model = start(process.execPath, ['model.js'], app, {});
  running.push(model);
  const { baseURL } = JSON.parse((await model.waitFor(/\{"baseURL":.*\}/))[0]) as { baseURL: string };
  // Two worker processes under the supervisor: its fork of the compiled worker entry is what a user runs.
  worker = start(bin(), ['worker', '--config', './agent-fleet.config.js', '--processes', '2'], app, {
    ...fleetEnv(),
    OPENAI_BASE_URL: baseURL,
    OPENAI_API_KEY: 'test-key',
    METRICS_PORT: '0',
  });
  running.push(worker);
  await timed('worker start', () =>
    worker.waitFor(/"msg":"worker started"[\s\S]*"msg":"worker started"/, 90_000),
  );
  console.info(`package test set-up: ${phases.join(', ')}`);
}, SETUP_MS);

afterAll(async () => {
  await Promise.all(running.map((process) => process.stop()));
  await Promise.all([ns, ...ownTests].map((namespace) => namespace?.cleanup()));
  if (folder) rmSync(folder, { recursive: true, force: true });
}, 120_000);

function sizeOf(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + sizeOf(join(path, name)), 0);
}

describe('the installed packages', () => {
  it('the client package installs bullmq, ioredis, zod and their dependencies, nothing of the adapters', () => {
    const lock = JSON.parse(readFileSync(join(producer, 'node_modules', '.package-lock.json'), 'utf8')) as {
      packages: Record<string, unknown>;
    };
    const names = Object.keys(lock.packages).map((path) => path.replace(/^.*node_modules\//, ''));
    const client = JSON.parse(
      readFileSync(join(producer, 'node_modules', '@agent-fleet', 'client', 'package.json'), 'utf8'),
    ) as { dependencies: Record<string, string> };
    expect(Object.keys(client.dependencies).sort()).toEqual(['bullmq', 'ioredis', 'zod']);
    expect(names.filter((name) => ADAPTERS.includes(name) || name === 'agent-fleet')).toEqual([]);
    const dependencies = names.filter((name) => name !== '@agent-fleet/client');
    const megabytes = sizeOf(join(producer, 'node_modules')) / 1e6;
    // The figure docs/installing.md states; a tree that grows past these bounds fails here first.
    console.info(`client package: ${dependencies.length} packages, ${megabytes.toFixed(1)} MB installed`);
    expect(dependencies.length).toBeLessThan(40);
    expect(megabytes).toBeLessThan(60);
  });

  it('a producer in plain JavaScript enqueues with the client package and reads a typed result', async () => {
    const { code, stdout, stderr } = await runToEnd(
      process.execPath,
      ['enqueue.js', 'Ada'],
      producer,
      fleetEnv(),
    );
    expect(code, stderr).toBe(0);
    const result = agentResultSchema.parse(JSON.parse(stdout.trim().split('\n').at(-1)!));
    expect(result).toMatchObject({ status: 'succeeded', stopReason: 'answer', toolCalls: 1, error: null });
    // The output of the agent's own schema, made from what its own tool said.
    expect(result.output).toEqual({ greeting: 'HELLO ADA', loud: true });
    expect(worker.output()).toMatch(new RegExp(`agent-fleet\\.config\\.js`));
  }, 90_000);

  it("the bin's enqueue runs the agent with --agent and --input and prints the result", async () => {
    const args = ['enqueue', '--agent', 'greeter', '--input', '{"name":"Bo"}', '--wait', '--timeout', '60'];
    const { code, stdout, stderr } = await runToEnd(bin(), args, app, fleetEnv());
    expect(code, stderr).toBe(0);
    const result = agentResultSchema.parse(JSON.parse(stdout.trim().split('\n').at(-1)!));
    expect(result.output).toEqual({ greeting: 'HELLO BO', loud: true });
  }, 90_000);

  it("the bin's api and board start from the installed package and answer", async () => {
    const token = 'package-test-token';
    const api = start(bin(), ['api'], app, { ...fleetEnv(), API_TOKEN: token, API_PORT: '0' });
    const board = start(bin(), ['board'], app, {
      ...fleetEnv(),
      BOARD_USER: 'ops',
      BOARD_PASSWORD: 'package-test-password',
      BOARD_PORT: '0',
    });
    running.push(api, board);
    const [, apiUrl] = await api.waitFor(/API listening on (http:\/\/[^"\s]+)/);
    const [, boardUrl] = await board.waitFor(/listening on (http:\/\/[^"\s]+)/);
    expect((await fetch(`${apiUrl}/healthz`)).status).toBe(200);
    const committed = JSON.parse(readFileSync(join(REPOSITORY, 'docs', 'openapi.json'), 'utf8')) as unknown;
    expect(await (await fetch(`${apiUrl}/openapi.json`)).json()).toEqual(committed);
    const agents = await fetch(`${apiUrl}/v1/agents`, { headers: { authorization: `Bearer ${token}` } });
    expect(((await agents.json()) as { agents: { name: string }[] }).agents.map((a) => a.name)).toEqual([
      'greeter',
    ]);
    const login = Buffer.from('ops:package-test-password').toString('base64');
    const page = await fetch(`${boardUrl}/`, { headers: { authorization: `Basic ${login}` } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    await Promise.all([api.stop(), board.stop()]);
    expect(api.child.exitCode).toBe(0);
    expect(board.child.exitCode).toBe(0);
  }, 90_000);

  it('the bin refuses a TypeScript configuration it cannot load, saying what to do, and a missing one', async () => {
    // An enum: Node 20 loads no .ts at all, and Node 22.18 and later, which strip types, cannot strip it.
    writeFileSync(
      join(app, 'typed.config.ts'),
      'enum Mode { Loud }\nexport default { agents: [] as never[], mode: Mode.Loud };\n',
    );
    const typed = await runToEnd(bin(), ['worker', '--config', 'typed.config.ts'], app, {
      ...fleetEnv(),
      OPENAI_API_KEY: 'test-key',
    });
    expect(typed.code).toBe(1);
    expect(typed.stdout + typed.stderr).toMatch(
      /typed\.config\.ts cannot be loaded (without a TypeScript loader|by stripping its types \(.*\)): write it as \.js/,
    );
    const missing = await runToEnd(bin(), ['worker', '--config', 'nowhere.js'], app, fleetEnv());
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--config: no file at .*nowhere\.js/);
  }, 90_000);

  // After the installs (their tarballs were packed with --ignore-scripts): this rebuilds packages/client/dist.
  it('npm pack in packages/client, its prepack run, ships every Lua file its modules read', async () => {
    const clientFolder = join(REPOSITORY, 'packages', 'client');
    // As from a fresh checkout: nothing left by the whole project's build.
    rmSync(join(clientFolder, 'dist'), { recursive: true, force: true });
    const output = await npm(['pack', '--dry-run', '--json'], clientFolder);
    // The prepack's own output comes first on stdout.
    const [packed] = JSON.parse(output.slice(output.search(/^\[/m))) as { files: { path: string }[] }[];
    const files = new Set(packed!.files.map((file) => file.path));
    const read: string[] = [];
    for (const file of files) {
      if (!file.endsWith('.js')) continue;
      // Comments left out (lua-script.js shows the pattern with an example name).
      const code = readFileSync(join(clientFolder, file), 'utf8').replace(/^\s*(\/\/|\/?\*).*$/gm, '');
      for (const [, name] of code.matchAll(/new URL\('\.\/([\w-]+\.lua)', import\.meta\.url\)/g)) {
        read.push(join(file, '..', name!));
      }
    }
    expect(read).toContain('dist/src/fleet/spend-reserve.lua');
    expect(read.filter((path) => !files.has(path))).toEqual([]);
  }, 180_000);

  it(
    'a TypeScript service type-checks against the installed declarations, skipLibCheck off',
    async () => {
      const { code, stdout, stderr } = await typeCheck;
      expect(code, `${stdout}${stderr}`).toBe(0);
    },
    SETUP_MS,
  );
  it('a plain-JS configuration wires the built-in tools from agent-fleet/worker, allowedDomains as a list', async () => {
    const { code, stdout, stderr } = await runToEnd(process.execPath, ['builtin-tools.js'], app, {});
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout.trim())).toEqual({
      ownTools: ['sql_query', 'list_tables', 'describe_table', 'send_email'],
      fromEnvironment: ['sql_query', 'list_tables', 'describe_table', 'send_email'],
      agents: ['analyst', 'default'],
      refusal: 'ConfigError: sendEmailTool: allowedDomains must be a list of domains, e.g. ["acme.example"]',
    });
  }, 60_000);

  it('every bin command the docs name answers --help', async () => {
    const pages = ['README.md', ...readdirSync(join(REPOSITORY, 'docs')).map((name) => join('docs', name))]
      .filter((page) => page.endsWith('.md'))
      .map((page) => readFileSync(join(REPOSITORY, page), 'utf8'));
    // A command as the docs write one: `npx agent-fleet trace …` in a block, or `agent-fleet worker …` in a span.
    const commands = [
      ...new Set(
        pages.flatMap((text) => [...text.matchAll(/(?:npx |`)agent-fleet ([a-z][\w-]*)/g)].map((m) => m[1]!)),
      ),
    ];
    for (const expected of [
      'worker',
      'enqueue',
      'api',
      'board',
      'migrate',
      'scheduler',
      'trace',
      'report',
      'init',
    ])
      expect(commands).toContain(expected);
    for (const command of commands) {
      const { code, stdout, stderr } = await runToEnd(bin(), [command, '--help'], app, {});
      expect(code, `agent-fleet ${command} --help: ${stderr}`).toBe(0);
      expect(stdout, command).toMatch(/^usage: /);
    }
  }, 120_000);

  it('agent-fleet init scaffolds a fleet whose own test passes against the installed package, and overwrites nothing', async () => {
    const made = await runToEnd(bin(), ['init', 'my-fleet'], app, {});
    expect(made.code, made.stderr).toBe(0);
    const scaffold = join(app, 'my-fleet');
    expect(readdirSync(scaffold).sort()).toEqual(
      ['.env.example', 'agent-fleet.config.js', 'greeter.test.js', 'package.json'].sort(),
    );
    const again = await runToEnd(bin(), ['init', 'my-fleet'], app, {});
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/my-fleet\/agent-fleet\.config\.js, .*already exist: nothing was written/);

    const own = createNamespace('package-init');
    ownTests.push(own);
    const test = await runToEnd(
      process.execPath,
      ['--test'],
      scaffold,
      { REDIS_URL, MYSQL_URL: own.mysqlUrl, QUEUE_PREFIX: own.prefix },
      120_000,
    );
    expect(test.code, `${test.stdout}${test.stderr}`).toBe(0);
    // node --test reports in TAP off a terminal on Node 20, in its spec format on Node 24.
    expect(test.stdout).toMatch(/^(# |ℹ )pass 1\b/m);
  }, 180_000);

  it('the scripted-model example passes its test against the installed packages', async () => {
    const own = createNamespace('package-example');
    ownTests.push(own);
    const example = join(app, 'scripted-model-example');
    mkdirSync(example);
    for (const file of readdirSync(join(REPOSITORY, 'examples', 'scripted-model')).filter((f) =>
      f.endsWith('.js'),
    ))
      cpSync(join(REPOSITORY, 'examples', 'scripted-model', file), join(example, file));
    const test = await runToEnd(
      process.execPath,
      ['--test', 'agents.test.js'],
      example,
      { REDIS_URL, MYSQL_URL: own.mysqlUrl, QUEUE_PREFIX: own.prefix },
      120_000,
    );
    expect(test.code, `${test.stdout}${test.stderr}`).toBe(0);
    expect(test.stdout).toMatch(/^(# |ℹ )pass 1\b/m);
  }, 180_000);

  it("the installed README's relative links name files the package ships", () => {
    const installed = join(app, 'node_modules', 'agent-fleet');
    const readme = readFileSync(join(installed, 'README.md'), 'utf8');
    const targets = [...readme.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)]
      .map((m) => m[1]!)
      .filter((target) => !/^[a-z]+:/.test(target));
    expect(targets.length).toBeGreaterThan(5);
    expect(targets.filter((target) => !existsSync(join(installed, target)))).toEqual([]);
    // .env.example of `init` points at this page of the package.
    expect(existsSync(join(installed, 'docs', 'configuration.md'))).toBe(true);
  });
});
