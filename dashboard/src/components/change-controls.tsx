/**
 * Controls that change things, for keys that may not: shown disabled with the reason (in the
 * tooltip and once in a note beside them), so a read key learns it before a click, not after.
 */
import type { ButtonHTMLAttributes, ComponentChildren } from 'preact';
import { useChangeRight } from '../access';

type ButtonProps = ButtonHTMLAttributes<HTMLButtonElement> & { children?: ComponentChildren };

/** A button that changes something: disabled, with the reason, when the key may not. */
export function ChangeButton({ disabled, title, ...props }: ButtonProps) {
  const right = useChangeRight();
  return <button type="button" {...props} disabled={disabled || !right.allowed} title={right.allowed ? title : right.reason} data-needs="admin" />;
}

/** The reason, once per place with changes, when the key may not make them. */
export function ReadOnlyNote({ children }: { children?: ComponentChildren }) {
  const right = useChangeRight();
  if (right.allowed) return null;
  return (
    <p class="read-only-note" data-read-only>
      {children ?? right.reason}
    </p>
  );
}
