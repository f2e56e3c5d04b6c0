// The approvals' paths of the OpenAPI document (approvals-routes.ts; docs/http-api.md#approvals).
import { APPROVAL_STATES } from '../src/approvals/approval.js';
import { BODY_ERRORS, error, json, pathParameter, ref, V1_ERRORS, type JsonObject } from './openapi-parts.js';

const APPROVAL_ERRORS = {
  ...V1_ERRORS,
  '503': error('Redis or the store is unreachable, or this API decides no approvals (`unavailable`).'),
};

function queryParameter(name: string, description: string, schema: JsonObject): JsonObject {
  return { name, in: 'query', required: false, description, schema };
}

const id = { type: 'string', minLength: 1, maxLength: 256 };

const approvalId = pathParameter('approvalId', 'As GET /v1/approvals lists it (`apr_…`).');

export function approvalPaths(): JsonObject {
  return {
    '/v1/approvals': {
      get: {
        operationId: 'listApprovals',
        summary: 'Tool calls waiting for (or given) a person’s decision',
        tags: ['approvals'],
        parameters: [
          queryParameter('state', 'Only approvals in this state.', {
            type: 'string',
            enum: [...APPROVAL_STATES],
          }),
          queryParameter('jobId', 'Only the calls of this task.', id),
          queryParameter('batchId', 'Only the calls of this batch’s tasks.', id),
          queryParameter('tool', 'Only the calls of this tool.', {
            type: 'string',
            minLength: 1,
            maxLength: 64,
          }),
          queryParameter('limit', 'At most this many (default 100), newest first.', {
            type: 'string',
            pattern: '^[0-9]{1,4}$',
            description: '1 to 1000',
          }),
        ],
        responses: {
          '200': json(ref('Approvals'), 'The approvals, newest first.'),
          '400': error('A bad or unknown query parameter (`invalid_query`, naming it in `issues`).'),
          ...APPROVAL_ERRORS,
        },
      },
    },
    '/v1/approvals/{approvalId}': {
      get: {
        operationId: 'getApproval',
        summary: 'One approval',
        tags: ['approvals'],
        parameters: [approvalId],
        responses: {
          '200': json(ref('Approval'), 'The approval.'),
          '404': error('No such approval (`not_found`).'),
          ...APPROVAL_ERRORS,
        },
      },
      post: {
        operationId: 'decideApproval',
        summary: 'Approve or reject one call',
        description:
          'Recorded once, under the name of the token that sent it. When none of the task’s calls waits any more, ' +
          'the task is woken and goes on: an approved call runs once, with the edited arguments if given; a ' +
          'rejected one answers the model `rejected by <who>: <reason>`.',
        tags: ['approvals'],
        parameters: [approvalId],
        requestBody: { required: true, content: { 'application/json': { schema: ref('ApprovalDecision') } } },
        responses: {
          '200': json(ref('Approval'), 'Decided: the approval with its decision.'),
          '400': error(
            'A refused decision (`invalid_decision`): an unknown field, `arguments` with a reject, or edited ' +
              'arguments the tool’s schema refuses, each named in `issues` (`arguments.to`). Nothing was decided.',
          ),
          '404': error('No such approval (`not_found`).'),
          '409': json(
            ref('ApprovalConflict'),
            'Decided before, or expired (`already_decided`): the first decision stands and is returned.',
          ),
          ...BODY_ERRORS,
          ...APPROVAL_ERRORS,
        },
      },
    },
    '/v1/batches/{batchId}/approvals': {
      post: {
        operationId: 'decideBatchApprovals',
        summary: 'One decision on every waiting call of one tool in a batch',
        tags: ['approvals', 'batches'],
        parameters: [pathParameter('batchId', 'As POST /v1/batches answered it.')],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: ref('BatchApprovalDecision') } },
        },
        responses: {
          '200': json(
            ref('BatchApprovalsDecided'),
            'What was decided (none when nothing of that tool waits); `conflicts`: calls decided meanwhile by ' +
              'someone else.',
          ),
          '400': error('A refused decision (`invalid_decision`, naming each field in `issues`).'),
          ...BODY_ERRORS,
          ...APPROVAL_ERRORS,
        },
      },
    },
  };
}
