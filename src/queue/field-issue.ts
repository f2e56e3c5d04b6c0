// A problem with one field of a task or batch, named by its dotted path: what validation reports, field by field.

export interface FieldIssue {
  /** Dotted path of the field, e.g. `budget.maxSteps`; empty for the task as a whole. */
  path: string;
  message: string;
}
