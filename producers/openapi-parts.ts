// The pieces every path of the OpenAPI document (openapi.ts, openapi-approvals.ts) is written with: references to
// the components, JSON answers, the error answers every /v1 route shares, path parameters.

export type JsonObject = Record<string, unknown>;

/** A reference to a component of openapi-components.ts (the document's test checks that each resolves). */
export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

export function json(schema: JsonObject, description: string): JsonObject {
  return { description, content: { 'application/json': { schema } } };
}

export const error = (description: string) => json(ref('Error'), description);

/** What every /v1 route may also answer. */
export const V1_ERRORS = {
  '401': error('No token, or a wrong one (`unauthorized`); nothing was read or enqueued.'),
  '500': error('An unexpected failure (`internal`); the details are in the API’s log, never here.'),
  '503': error('Redis is unreachable (`unavailable`): try again later.'),
};

export const BODY_ERRORS = {
  '413': error('The body is over the size limit (`payload_too_large`).'),
  '415': error('The body is not UTF-8 JSON (`unsupported_media_type`).'),
};

export function pathParameter(name: string, description: string): JsonObject {
  return {
    name,
    in: 'path',
    required: true,
    description,
    schema: { type: 'string', minLength: 1, maxLength: 256 },
  };
}
