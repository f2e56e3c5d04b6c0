// A tenant: whom a task is run for (a customer, a team). A task's `tenant` names it; the fleet limits how many
// of a tenant's jobs run at once (TENANT_CONCURRENCY) and what a tenant spends per day (TENANT_DAILY_MAX_*).
// One pattern for the task schema, the spend ledger's scope names and the Redis keys of the tenant slots.
export const TENANT_NAME = /^[A-Za-z0-9_.@-]{1,64}$/;

export const TENANT_NAME_RULE = '1 to 64 letters, digits and _.@- characters';
