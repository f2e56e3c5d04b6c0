// `npm run openapi`: writes docs/openapi.json, the OpenAPI document the API serves at GET /openapi.json
// (producers/openapi.ts), formatted as the linter wants it. test/integration/producers/openapi.test.ts fails while it is stale.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { buildOpenApiDocument } from '../producers/openapi.js';

const OPENAPI_FILE = join(import.meta.dirname, '..', 'docs', 'openapi.json');

const options = (await resolveConfig(OPENAPI_FILE)) ?? {};
const text = await format(JSON.stringify(buildOpenApiDocument()), { ...options, filepath: OPENAPI_FILE });
writeFileSync(OPENAPI_FILE, text);
process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
