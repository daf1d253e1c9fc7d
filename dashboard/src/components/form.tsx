/**
 * What forms and buttons that change things show: the API's message for a field beside it, the
 * message of a failure no field explains, and the outcome of an action (done, or why not).
 */
import { useState } from 'preact/hooks';
import { asApiError, type ApiError } from '../api';

/** The id of a field's message, for the input's aria-describedby. */
export const messageId = (field: string) => `err-${field.replace(/\W+/g, '-')}`;

/** aria attributes of an input whose field the API named. */
export function invalidProps(error: ApiError | undefined, field: string) {
  return error?.fieldMessage(field) ? { 'aria-invalid': true, 'aria-describedby': messageId(field) } : {};
}

export function FieldMessage({ error, field, exact }: { error: ApiError | undefined; field: string; exact?: boolean }) {
  const message = error?.fieldMessage(field, exact);
  return message ? (
    <p class="field-error" id={messageId(field)} data-field-error={field}>
      {message}
    </p>
  ) : null;
}

/** A failure with no field to put it beside (or a summary when there are). */
export function FormError({ error, summary }: { error: ApiError | undefined; summary?: string }) {
  if (!error) return null;
  if (error.fields.length && !summary) return null;
  return (
    <p class="field-error" role="alert">
      {error.fields.length ? summary : error.message}
    </p>
  );
}

export interface Outcome {
  text: string;
  bad?: boolean;
}

/**
 * Runs an action and keeps what it came to: its own text (when it returns one), or the failure's
 * message. `after` runs either way (e.g. to reload a list).
 */
export function useOutcome(after?: () => void): [Outcome | undefined, (action: () => Promise<string | void>) => Promise<void>] {
  const [outcome, setOutcome] = useState<Outcome | undefined>();
  const run = async (action: () => Promise<string | void>) => {
    setOutcome(undefined);
    try {
      const text = await action();
      if (text) setOutcome({ text });
    } catch (err) {
      setOutcome({ text: (err as Error).message, bad: true });
    }
    after?.();
  };
  return [outcome, run];
}

export function OutcomeMessage({ outcome }: { outcome: Outcome | undefined }) {
  if (!outcome) return null;
  return (
    <p class={outcome.bad ? 'field-error' : 'notice'} role={outcome.bad ? 'alert' : 'status'}>
      {outcome.text}
    </p>
  );
}

/**
 * A form's submit handler, the error of its last attempt (cleared when it is sent again), and
 * whether it is being sent.
 */
export function useSubmit(action: () => Promise<void>): [ApiError | undefined, (event: Event) => Promise<void>, boolean] {
  const [error, setError] = useState<ApiError | undefined>();
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    setBusy(true);
    try {
      await action();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return [error, submit, busy];
}
