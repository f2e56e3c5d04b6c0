// The world of the cost scenario (6): a MariaDB database of its own with the demo's sales tables and a small
// support organisation (3 teams, 12 people, their tickets), the real SQL tools over it, the real send_email
// tool (its ledger kept in memory, its transport a stand-in that accepts every message and keeps it). Both
// loops measured run these very tools.
import mysql from 'mysql2/promise';
import { seedDemoDatabase } from '../../src/demo/seed-demo-database.js';
import { openDataDatabase, type DataDatabase } from '../../src/tools/data-database.js';
import type { EffectClaimResult, EffectRow, EffectRowClaim } from '../../src/effects/effect-ledger.js';
import type { OnceLedger } from '../../src/effects/effect-once.js';
import { ToolRegistry } from '../../src/kernel/tool-registry.js';
import { createSendEmailTool } from '../../src/tools/send-email.js';
import { createSqlTools } from '../../src/tools/sql-tools.js';
import type { Tool } from '../../src/kernel/tool.js';
import { MYSQL_SERVER } from './fleet.js';

export const TEAMS = ['Support', 'Billing', 'Onboarding'] as const;
const PEOPLE: Record<(typeof TEAMS)[number], string[]> = {
  Support: ['Ada Lovelace', 'Alan Turing', 'Grace Hopper', 'Edsger Dijkstra'],
  Billing: ['Barbara Liskov', 'Donald Knuth', 'Frances Allen', 'John Backus'],
  Onboarding: ['Katherine Johnson', 'Ken Thompson', 'Margaret Hamilton', 'Radia Perlman'],
};

export interface Person {
  name: string;
  email: string;
  team: string;
  closedInOctober: number;
}

/** The 12 people and how many tickets each closed in October 2026: what a solved run's answer must list. */
export function people(): Person[] {
  return TEAMS.flatMap((team, t) =>
    PEOPLE[team].map((name, i) => ({
      name,
      email: `${name.toLowerCase().replace(/\s+/g, '.')}@example.com`,
      team,
      closedInOctober: 3 + ((t * 5 + i * 7) % 11),
    })),
  );
}

async function seedSupportTables(url: string): Promise<void> {
  const connection = await mysql.createConnection(url);
  try {
    for (const table of ['tickets', 'people', 'teams'])
      await connection.query(`DROP TABLE IF EXISTS \`${table}\``);
    await connection.query(
      'CREATE TABLE teams (id INT UNSIGNED NOT NULL PRIMARY KEY, name VARCHAR(60) NOT NULL UNIQUE)',
    );
    await connection.query(`CREATE TABLE people (
      id INT UNSIGNED NOT NULL PRIMARY KEY, name VARCHAR(100) NOT NULL UNIQUE, email VARCHAR(190) NOT NULL,
      team_id INT UNSIGNED NOT NULL, hired_on DATE NOT NULL,
      CONSTRAINT fk_people_team FOREIGN KEY (team_id) REFERENCES teams (id))`);
    await connection.query(`CREATE TABLE tickets (
      id INT UNSIGNED NOT NULL PRIMARY KEY, person_id INT UNSIGNED NOT NULL, status VARCHAR(16) NOT NULL,
      priority VARCHAR(8) NOT NULL, opened_at DATETIME NOT NULL, closed_at DATETIME NULL,
      KEY ix_tickets_closed (status, closed_at),
      CONSTRAINT fk_tickets_person FOREIGN KEY (person_id) REFERENCES people (id))`);
    await connection.query('INSERT INTO teams VALUES ?', [TEAMS.map((name, i) => [i + 1, name])]);
    const everyone = people();
    await connection.query('INSERT INTO people VALUES ?', [
      everyone.map((p, i) => [i + 1, p.name, p.email, TEAMS.indexOf(p.team as never) + 1, '2024-03-01']),
    ]);
    const tickets: unknown[][] = [];
    everyone.forEach((p, i) => {
      // The October closures, and others that must not count: open ones, and closures in September.
      for (let k = 0; k < p.closedInOctober; k++)
        tickets.push([
          tickets.length + 1,
          i + 1,
          'closed',
          'normal',
          '2026-10-01 08:00:00',
          `2026-10-${String(2 + k).padStart(2, '0')} 12:00:00`,
        ]);
      tickets.push([tickets.length + 1, i + 1, 'open', 'high', '2026-10-20 09:00:00', null]);
      tickets.push([
        tickets.length + 1,
        i + 1,
        'closed',
        'low',
        '2026-09-01 09:00:00',
        '2026-09-15 10:00:00',
      ]);
    });
    await connection.query('INSERT INTO tickets VALUES ?', [tickets]);
  } finally {
    await connection.end();
  }
}

/** An effect ledger in memory: one run at a time, nothing to settle after a crash. */
class MemoryLedger implements OnceLedger {
  readonly rows = new Map<string, EffectRow>();
  async claim(claim: EffectRowClaim): Promise<EffectClaimResult> {
    const now = new Date();
    this.rows.set(claim.effectKey, {
      effectKey: claim.effectKey,
      jobId: claim.jobId,
      tool: claim.tool,
      status: 'pending',
      result: null,
      ref: claim.ref ?? claim.effectKey,
      detail: claim.detail ?? null,
      error: null,
      attempt: 1,
      startedAt: claim.started ? now : null,
      createdAt: now,
      updatedAt: now,
      ageMs: 0,
    });
    return { kind: 'new', attempt: 1 };
  }
  async get(effectKey: string) {
    return this.rows.get(effectKey) ?? null;
  }
  async markStarted() {
    return true;
  }
  async markDone(effectKey: string, value: unknown) {
    const row = this.rows.get(effectKey);
    if (row) Object.assign(row, { status: 'done', result: value });
  }
  recordDone(effectKey: string, value: unknown) {
    return this.markDone(effectKey, value);
  }
  async release() {
    return true;
  }
  async markUncertain() {
    return true;
  }
  async noteError() {}
}

export interface CostWorld {
  tools: ToolRegistry;
  /** Emails the transport accepted since the last `resetMail()`. */
  mail: { to: string; subject: string; text: string }[];
  resetMail(): void;
  close(): Promise<void>;
}

export async function startCostWorld(database: string): Promise<CostWorld> {
  const reader = `${database.slice(0, 24)}_r`;
  await seedDemoDatabase({
    adminUrl: MYSQL_SERVER,
    database,
    readerUser: reader,
    readerPassword: 'bench-reader',
  });
  await seedSupportTables(`${MYSQL_SERVER}/${database}`);
  const db: DataDatabase = await openDataDatabase(`${MYSQL_SERVER}/${database}`, { checkGrants: false });
  const mail: CostWorld['mail'] = [];
  const sendEmail = createSendEmailTool({
    ledger: new MemoryLedger(),
    transport: {
      async sendMail(message) {
        mail.push({ to: String(message.to), subject: String(message.subject), text: String(message.text) });
        return { messageId: String(message.messageId), response: '250 2.0.0 Ok: queued' } as never;
      },
    },
    from: 'reports@agent-fleet.local',
    allowedDomains: ['example.com'],
    maxPerRun: 10,
  });
  const tools = new ToolRegistry([...createSqlTools(db), sendEmail as Tool]);
  return {
    tools,
    mail,
    resetMail: () => void mail.splice(0),
    async close() {
      await db.close();
      const connection = await mysql.createConnection(MYSQL_SERVER);
      try {
        await connection.query(`DROP DATABASE IF EXISTS \`${database}\``);
        await connection.query(`DROP USER IF EXISTS '${reader}'@'%'`);
      } finally {
        await connection.end();
      }
    },
  };
}
