// The demo's sales data, generated from a seed so every machine, test and demo run sees the same rows: the
// scripted demo model and the tests know the right answers in advance. A seeded PRNG (mulberry32), never
// Math.random. Money is kept in integer cents while generating (no float drift) and exported as the DECIMAL
// text MySQL stores and returns ('1234.50'), so `orders.total` equals the sum of its items to the cent.
//
// The reference question, "top 3 customers by Q1 2024 sales" (sum of completed orders' totals with order_date
// in 2024-01-01..2024-03-31), must have one clear answer: three customers get extra Q1 orders that lift them
// above everyone else with wide gaps (see liftTopCustomers), and the generator checks it before returning.

export interface CustomerRow {
  id: number;
  name: string;
  email: string;
  country: string;
  /** DATETIME text, 'YYYY-MM-DD HH:MM:SS'. */
  created_at: string;
}

export interface ProductRow {
  id: number;
  name: string;
  category: string;
  /** DECIMAL(10,2) text. */
  price: string;
}

export type OrderStatus = 'completed' | 'cancelled' | 'refunded';

export interface OrderRow {
  id: number;
  customer_id: number;
  /** DATE text, 'YYYY-MM-DD'. */
  order_date: string;
  status: OrderStatus;
  /** DECIMAL(12,2) text: the sum of quantity * unit_price of the order's items. */
  total: string;
}

export interface OrderItemRow {
  id: number;
  order_id: number;
  product_id: number;
  quantity: number;
  /** DECIMAL(10,2) text. */
  unit_price: string;
}

export interface SalesData {
  seed: number;
  customers: CustomerRow[];
  products: ProductRow[];
  orders: OrderRow[];
  orderItems: OrderItemRow[];
}

export interface TopCustomer {
  id: number;
  name: string;
  email: string;
  /** Sum of the customer's completed Q1 2024 order totals, DECIMAL text. */
  total: string;
}

export const DEFAULT_SALES_SEED = 20240331;

/** The reference question of the demo, and a query that answers it on this schema. */
export const REFERENCE_QUESTION = 'Find the top 3 customers by Q1 2024 sales';
export const REFERENCE_SQL =
  "SELECT c.id, c.name, c.email, SUM(o.total) AS q1_sales FROM customers c JOIN orders o ON o.customer_id = c.id WHERE o.status = 'completed' AND o.order_date BETWEEN '2024-01-01' AND '2024-03-31' GROUP BY c.id, c.name, c.email ORDER BY q1_sales DESC LIMIT 3";

const CUSTOMER_COUNT = 200;
const BASE_ORDER_COUNT = 2_960;
const Q1_START = '2024-01-01';
const Q1_END = '2024-03-31';

// prettier-ignore
const FIRST_NAMES = [
  'Ada', 'Alan', 'Amara', 'Ben', 'Carla', 'Chen', 'Dara', 'Elena', 'Felix', 'Grace', 'Hana', 'Ivan', 'Jonas',
  'Kofi', 'Lena', 'Liam', 'Maya', 'Mateo', 'Nina', 'Omar', 'Priya', 'Quinn', 'Rosa', 'Sam', 'Sofia', 'Tariq',
  'Uma', 'Viktor', 'Wen', 'Yara', 'Zoe', 'Noah',
];
// prettier-ignore
const LAST_NAMES = [
  'Smith', "O'Brien", 'Okafor', 'Schmidt', 'Dubois', 'Rossi', 'Garcia', 'Novak', 'Tanaka', 'Kowalski',
  'Jensen', 'Murphy', 'Silva', 'Weber', 'Haddad', 'Larsen', 'Moreau', 'Fischer', 'Patel', 'Nguyen', 'Costa',
  'Berg', 'Romano', 'Keller', 'Adeyemi',
];
/** Country codes with weights; 'UK' rather than ISO 'GB' because that is what people (and models) type. */
// prettier-ignore
const COUNTRIES: readonly (readonly [string, number])[] = [
  ['US', 30], ['UK', 14], ['DE', 14], ['FR', 10], ['AT', 5], ['ES', 6], ['IT', 6], ['NL', 5], ['CA', 5],
  ['AU', 5],
];
/** Category, price range in whole units, product names. */
// prettier-ignore
const CATALOGUE: readonly (readonly [string, number, number, readonly string[]])[] = [
  ['books', 8, 45, ['Super Novel', 'Field Guide to Birds', 'Cookbook Classics', 'SQL Pocket Reference', 'Atlas of Rivers']],
  ['music', 9, 35, ['Jazz Standards Vinyl', 'Piano Sonatas CD', 'Indie Mixtape', 'Live at the Opera', 'Synthwave Nights']],
  ['film', 10, 40, ['Silent Classics Box', 'Nature Documentary', 'Space Saga 4K', 'Noir Collection', 'Animated Shorts']],
  ['electronics', 60, 480, ['Super Headphones', 'Smart Speaker', 'E-Reader', 'Action Camera', 'Mechanical Keyboard']],
  ['home', 15, 160, ['Cast Iron Pan', 'Linen Sheets', 'Desk Lamp', 'Espresso Grinder', 'Wool Throw']],
  ['toys', 10, 90, ['Wooden Train Set', 'Puzzle 1000', 'Robot Kit', 'Plush Fox', 'Board Game Night']],
  ['garden', 12, 220, ['Pruning Shears', 'Raised Bed Kit', 'Hose Reel', 'Seed Vault', 'Solar Lanterns']],
  ['sports', 15, 260, ['Yoga Mat', 'Trail Shoes', 'Tennis Racket', 'Road Helmet', 'Climbing Chalk']],
];

/** mulberry32: a tiny, fast, well-mixed 32-bit PRNG; returns floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Random {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  /** Integer in [min, max], both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }
  weighted<T>(items: readonly (readonly [T, number])[]): T {
    const total = items.reduce((sum, [, weight]) => sum + weight, 0);
    let roll = this.next() * total;
    for (const [item, weight] of items) {
      roll -= weight;
      if (roll < 0) return item;
    }
    return (items[items.length - 1] as readonly [T, number])[0];
  }
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [items[i], items[j]] = [items[j] as T, items[i] as T];
    }
    return items;
  }
}

export function generateSalesData(seed: number = DEFAULT_SALES_SEED): SalesData {
  const random = new Random(seed);
  const products = makeProducts(random);
  const customers = makeCustomers(random);
  const priceCents = new Map(products.map((p) => [p.id, toCents(p.price)]));
  const builder = new OrderBuilder(priceCents);

  // Some customers buy far more often than others: weight = r^3 gives a long tail, as real shops have.
  const customerWeights = customers.map((c) => [c, 0.05 + random.next() ** 3] as const);
  const orderDays = daysBetween('2023-01-01', '2024-12-31');
  const productIds = products.map((p) => p.id);
  for (let i = 0; i < BASE_ORDER_COUNT; i++) {
    const customer = random.weighted(customerWeights);
    // No order before the customer signed up.
    const first = orderDays.findIndex((day) => day >= customer.created_at.slice(0, 10));
    const date = orderDays[random.int(Math.max(first, 0), orderDays.length - 1)] as string;
    const status = random.weighted<OrderStatus>([
      ['completed', 88],
      ['cancelled', 7],
      ['refunded', 5],
    ]);
    const lines = random.int(1, 4);
    const chosen = random.shuffle([...productIds]).slice(0, lines);
    const quantities: [number, number][] = [
      [1, 60],
      [2, 28],
      [3, 12],
    ];
    builder.add(
      customer.id,
      date,
      status,
      chosen.map((productId) => ({ productId, quantity: random.weighted(quantities) })),
    );
  }
  liftTopCustomers(random, customers, products, builder);

  const { orders, items } = builder.chronological();
  const data: SalesData = { seed, customers, products, orders, orderItems: items };
  assertClearTopThree(data);
  return data;
}

/**
 * Sums each customer's completed Q1 2024 orders and returns the top n, highest first (ties by id, although
 * the generated data has none among the first four).
 */
export function expectedTopCustomers(
  data: Pick<SalesData, 'customers' | 'orders'>,
  n: number,
): TopCustomer[] {
  return rankQ1(data)
    .slice(0, n)
    .map(({ customer, cents }) => ({
      id: customer.id,
      name: customer.name,
      email: customer.email,
      total: fromCents(cents),
    }));
}

function rankQ1(data: Pick<SalesData, 'customers' | 'orders'>): { customer: CustomerRow; cents: number }[] {
  const sums = q1Sums(data.orders);
  return data.customers
    .map((customer) => ({ customer, cents: sums.get(customer.id) ?? 0 }))
    .filter((entry) => entry.cents > 0)
    .sort((a, b) => b.cents - a.cents || a.customer.id - b.customer.id);
}

function q1Sums(orders: readonly OrderRow[]): Map<number, number> {
  const sums = new Map<number, number>();
  for (const order of orders) {
    if (order.status !== 'completed' || order.order_date < Q1_START || order.order_date > Q1_END) continue;
    sums.set(order.customer_id, (sums.get(order.customer_id) ?? 0) + toCents(order.total));
  }
  return sums;
}

function makeProducts(random: Random): ProductRow[] {
  const products: ProductRow[] = [];
  for (const [category, low, high, names] of CATALOGUE) {
    for (const name of names) {
      // Prices end in .99, .49 or .00 like shop prices do.
      const cents = random.int(low, high) * 100 + random.pick([99, 49, 0]) - (random.next() < 0.5 ? 100 : 0);
      products.push({ id: products.length + 1, name, category, price: fromCents(Math.max(cents, 99)) });
    }
  }
  return products;
}

function makeCustomers(random: Random): CustomerRow[] {
  const names = random.shuffle(
    FIRST_NAMES.flatMap((first) => LAST_NAMES.map((last) => [first, last] as const)),
  );
  const createdDays = daysBetween('2022-01-01', '2024-06-30');
  return names.slice(0, CUSTOMER_COUNT).map(([first, last], index) => {
    const time = `${pad(random.int(7, 22))}:${pad(random.int(0, 59))}:${pad(random.int(0, 59))}`;
    return {
      id: index + 1,
      name: `${first} ${last}`,
      // Every address is at example.com (RFC 2606): the demo's emails can never reach a real person.
      email: `${first}.${last}`.toLowerCase().replace(/[^a-z.]/g, '') + '@example.com',
      country: random.weighted(COUNTRIES),
      created_at: `${random.pick(createdDays)} ${time}`,
    };
  });
}

interface Line {
  productId: number;
  quantity: number;
}

/** Appends orders and their items with consecutive ids; the order total is the sum of its lines. */
class OrderBuilder {
  readonly orders: OrderRow[] = [];
  readonly items: OrderItemRow[] = [];
  constructor(private readonly priceCents: ReadonlyMap<number, number>) {}

  add(customerId: number, date: string, status: OrderStatus, lines: readonly Line[]): number {
    const orderId = this.orders.length + 1;
    let cents = 0;
    for (const line of lines) {
      const unit = this.priceCents.get(line.productId) ?? 0;
      cents += unit * line.quantity;
      this.items.push({
        id: this.items.length + 1,
        order_id: orderId,
        product_id: line.productId,
        quantity: line.quantity,
        unit_price: fromCents(unit),
      });
    }
    this.orders.push({
      id: orderId,
      customer_id: customerId,
      order_date: date,
      status,
      total: fromCents(cents),
    });
    return cents;
  }

  /** The same rows renumbered so order ids grow with order_date, as a shop's auto-increment ids would. */
  chronological(): { orders: OrderRow[]; items: OrderItemRow[] } {
    const sorted = [...this.orders].sort((a, b) => a.order_date.localeCompare(b.order_date) || a.id - b.id);
    const newId = new Map(sorted.map((order, index) => [order.id, index + 1]));
    const orders = sorted.map((order, index) => ({ ...order, id: index + 1 }));
    const items = this.items
      .map((item) => ({ ...item, order_id: newId.get(item.order_id) as number }))
      .sort((a, b) => a.order_id - b.order_id || a.id - b.id)
      .map((item, index) => ({ ...item, id: index + 1 }));
    return { orders, items };
  }
}

/**
 * Gives three customers extra completed Q1 2024 orders until their sums pass targets spaced 2 * B apart above
 * everyone else's best, where B bounds one extra order: each lifted sum lands in [target, target + B), so the
 * three are separated from each other and from the fourth by at least B. Their orders are ordinary rows; only
 * the amounts make them stand out.
 */
function liftTopCustomers(
  random: Random,
  customers: readonly CustomerRow[],
  products: readonly ProductRow[],
  builder: OrderBuilder,
): void {
  const expensive = [...products].sort((a, b) => toCents(b.price) - toCents(a.price)).slice(0, 6);
  const maxQuantity = 4;
  const bound = toCents((expensive[0] as ProductRow).price) * maxQuantity;
  const eligible = customers.filter((c) => c.created_at < Q1_START);
  const chosen = random.shuffle([...eligible]).slice(0, 3);
  const sums = q1Sums(builder.orders);
  const chosenIds = new Set(chosen.map((c) => c.id));
  const othersBest = Math.max(0, ...[...sums].filter(([id]) => !chosenIds.has(id)).map(([, cents]) => cents));
  const q1Days = daysBetween(Q1_START, Q1_END);
  chosen.forEach((customer, rank) => {
    const target = othersBest + (3 - rank) * 2 * bound;
    let sum = sums.get(customer.id) ?? 0;
    while (sum < target) {
      const product = random.pick(expensive);
      sum += builder.add(customer.id, random.pick(q1Days), 'completed', [
        { productId: product.id, quantity: random.int(2, maxQuantity) },
      ]);
    }
  });
}

/** The generator's promise, checked rather than assumed: four distinct leading sums. */
function assertClearTopThree(data: SalesData): void {
  const ranked = rankQ1(data);
  const [a, b, c, d] = ranked.map((entry) => entry.cents);
  if (
    a === undefined ||
    b === undefined ||
    c === undefined ||
    d === undefined ||
    !(a > b && b > c && c > d)
  ) {
    throw new Error(`sales data seed ${data.seed} has no clear Q1 2024 top 3`);
  }
}

function toCents(decimal: string): number {
  const [whole = '0', fraction = ''] = decimal.split('.');
  return Number(whole) * 100 + Number(fraction.padEnd(2, '0').slice(0, 2));
}

function fromCents(cents: number): string {
  return `${Math.floor(cents / 100)}.${pad(cents % 100)}`;
}

function pad(value: number): string {
  return String(value).padStart(2, '0');
}

/** Every calendar day from first to last, inclusive, as 'YYYY-MM-DD' (computed in UTC: no DST gaps). */
function daysBetween(first: string, last: string): string[] {
  const days: string[] = [];
  for (let t = Date.parse(`${first}T00:00:00Z`); t <= Date.parse(`${last}T00:00:00Z`); t += 86_400_000) {
    days.push(new Date(t).toISOString().slice(0, 10));
  }
  return days;
}
