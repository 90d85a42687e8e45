// Shared page parts: flash messages, the error summary, labelled form fields with hints and
// errors, buttons (primary, secondary, destructive) and the confirm step of destructive actions.
import { type DomainError, fieldOf } from '../domain/errors';
import { CSRF_FIELD } from '../http/session';
import { type FieldWords, problemOf, wordsFor } from './form-words';
import * as React from './jsx';
import type { Child, Html } from './jsx';

/** A one-time message shown on the page after a redirect. */
export interface Flash {
  notice?: string;
  alert?: string;
}

/** One problem with the submitted form; `field` is the id of the input it belongs to. */
export interface FieldError {
  field?: string;
  message: string;
}

/**
 * A domain refusal shown on a form: at the input the error names (`fields` maps the domain's field,
 * e.g. `scopes`, to this form's input id, or to the id and the page's own words for it, per case:
 * pages/form-words.ts), else in the summary only with `otherwise`. Never by reading the message.
 */
export const fieldErrorOf = (
  err: DomainError,
  fields: Readonly<Record<string, string | { id: string; message: FieldWords }>>,
  otherwise = err.message,
): FieldError => {
  const name = fieldOf(err);
  const field = name === undefined ? undefined : fields[name];
  if (name === undefined || field === undefined) return { message: otherwise };
  if (typeof field === 'string') return { field, message: err.message };
  return { field: field.id, message: wordsFor(field.message, problemOf(err.details?.[name]?.[0])) };
};

export function FlashMessages({ flash }: { flash?: Flash }): Html {
  return (
    <>
      {flash?.notice ? (
        <div class="flash flash-notice" role="status" id="flash-notice">
          {flash.notice}
        </div>
      ) : null}
      {flash?.alert ? (
        <div class="flash flash-alert" role="alert" id="flash-alert">
          {flash.alert}
        </div>
      ) : null}
    </>
  );
}

/**
 * The list of problems at the top of a rejected form, each linking to its field (GOV.UK pattern).
 * Focus moves to it without JavaScript (`autofocus` on a `tabindex="-1"` box comes before any
 * field's in the document, so it wins), and a screen reader announces it (role=alert).
 */
export function ErrorSummary({ errors }: { errors?: readonly FieldError[] }): Html {
  if (!errors?.length) return React.EMPTY;
  return (
    <div
      class="error-summary"
      role="alert"
      aria-labelledby="error-summary-title"
      id="error-summary"
      tabindex="-1"
      autofocus
    >
      <h2 id="error-summary-title">There is a problem</h2>
      <ul>
        {errors.map((e) => (
          <li>{e.field ? <a href={`#${e.field}`}>{e.message}</a> : e.message}</li>
        ))}
      </ul>
    </div>
  );
}

export const CsrfField = ({ token }: { token: string }) => <input type="hidden" name={CSRF_FIELD} value={token} />;

const describedBy = (id: string, hint?: Child, error?: string) =>
  [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;

function FieldMessages({ id, hint, error }: { id: string; hint?: Child; error?: string }): Html {
  return (
    <>
      {hint ? (
        <span class="hint" id={`${id}-hint`}>
          {hint}
        </span>
      ) : null}
      {error ? (
        <span class="field-error" id={`${id}-error`}>
          <span class="visually-hidden">Error: </span>
          {error}
        </span>
      ) : null}
    </>
  );
}

export interface TextFieldProps {
  id: string;
  name: string;
  label: string;
  hint?: Child;
  error?: string;
  value?: string;
  type?: 'text' | 'password' | 'email' | 'date';
  autocomplete?: string;
  required?: boolean;
  autofocus?: boolean;
  inputmode?: string;
  maxlength?: number;
  min?: string;
  max?: string;
  pattern?: string;
}

export function TextField({ id, label, hint, error, type = 'text', ...input }: TextFieldProps): Html {
  return (
    <div class={error ? 'field invalid' : 'field'}>
      <label for={id}>{label}</label>
      <FieldMessages id={id} hint={hint} error={error} />
      <input
        type={type}
        id={id}
        {...input}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={describedBy(id, hint, error)}
      />
    </div>
  );
}

export function TextArea(props: {
  id: string;
  name: string;
  label: string;
  hint?: Child;
  error?: string;
  value?: string;
  rows?: number;
  required?: boolean;
}): Html {
  const { id, label, hint, error, value, ...rest } = props;
  return (
    <div class={error ? 'field invalid' : 'field'}>
      <label for={id}>{label}</label>
      <FieldMessages id={id} hint={hint} error={error} />
      <textarea
        id={id}
        {...rest}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={describedBy(id, hint, error)}
      >
        {value ?? ''}
      </textarea>
    </div>
  );
}

export interface Option {
  value: string;
  label: string;
  hint?: string;
}

export function Select(props: {
  id: string;
  name: string;
  label: string;
  options: readonly Option[];
  value?: string;
  hint?: Child;
  error?: string;
}): Html {
  const { id, name, label, options, value, hint, error } = props;
  return (
    <div class={error ? 'field invalid' : 'field'}>
      <label for={id}>{label}</label>
      <FieldMessages id={id} hint={hint} error={error} />
      <select
        id={id}
        name={name}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={describedBy(id, hint, error)}
      >
        {options.map((o) => (
          <option value={o.value} selected={o.value === value}>
            {o.label}
          </option>
        ))}
      </select>
    </div>
  );
}

/** A group of checkboxes sharing one name (`name[]`), each with its hint. */
export function CheckboxGroup(props: {
  id: string;
  name: string;
  legend: string;
  options: readonly Option[];
  checked: readonly string[];
  hint?: Child;
  error?: string;
}): Html {
  const { id, name, legend, options, checked, hint, error } = props;
  return (
    <fieldset class={error ? 'field invalid' : 'field'} id={id} aria-describedby={describedBy(id, hint, error)}>
      <legend>{legend}</legend>
      <FieldMessages id={id} hint={hint} error={error} />
      {options.map((o) => (
        <div class="check">
          <input
            type="checkbox"
            id={`${id}-${o.value}`}
            name={name}
            value={o.value}
            checked={checked.includes(o.value)}
            aria-describedby={o.hint ? `${id}-${o.value}-hint` : undefined}
          />
          <label for={`${id}-${o.value}`}>
            <strong>{o.label}</strong>
            {o.hint ? (
              <span class="hint" id={`${id}-${o.value}-hint`}>
                {o.hint}
              </span>
            ) : null}
          </label>
        </div>
      ))}
    </fieldset>
  );
}

export function Checkbox(props: { id: string; name: string; label: string; hint?: string; checked?: boolean }): Html {
  return (
    <div class="check field">
      <input
        type="checkbox"
        id={props.id}
        name={props.name}
        value="1"
        checked={props.checked}
        aria-describedby={props.hint ? `${props.id}-hint` : undefined}
      />
      <label for={props.id}>
        <strong>{props.label}</strong>
        {props.hint ? (
          <span class="hint" id={`${props.id}-hint`}>
            {props.hint}
          </span>
        ) : null}
      </label>
    </div>
  );
}

export type ButtonVariant = 'primary' | 'secondary' | 'danger';
const buttonClass = (variant: ButtonVariant, small?: boolean) =>
  `button${variant === 'secondary' ? '' : ` ${variant}`}${small ? ' small' : ''}`;

export function Button(props: {
  variant?: ButtonVariant;
  small?: boolean;
  name?: string;
  value?: string;
  id?: string;
  children?: Child;
}): Html {
  const { variant = 'primary', small, children, ...rest } = props;
  return (
    <button type="submit" class={buttonClass(variant, small)} {...rest}>
      {children}
    </button>
  );
}

export function LinkButton(props: { href: string; variant?: ButtonVariant; small?: boolean; children?: Child }): Html {
  return (
    <a class={buttonClass(props.variant ?? 'secondary', props.small)} href={props.href}>
      {props.children}
    </a>
  );
}

/** A one-button form (non-destructive actions that need no confirmation). */
export function PostButton(props: {
  action: string;
  csrf: string;
  variant?: ButtonVariant;
  small?: boolean;
  children?: Child;
}): Html {
  return (
    <form method="post" action={props.action} class="inline-form">
      <CsrfField token={props.csrf} />
      <Button variant={props.variant} small={props.small}>
        {props.children}
      </Button>
    </form>
  );
}

/**
 * The confirm step of a destructive action, without JavaScript: the list links (GET) to this
 * page, which changes nothing; only its button posts the action.
 */
export function ConfirmForm(props: {
  action: string;
  csrf: string;
  confirmLabel: string;
  cancelHref: string;
  children?: Child;
}): Html {
  return (
    <div class="panel">
      {props.children}
      <form method="post" action={props.action}>
        <CsrfField token={props.csrf} />
        <div class="actions">
          <Button variant="danger">{props.confirmLabel}</Button>
          <LinkButton href={props.cancelHref}>Cancel</LinkButton>
        </div>
      </form>
    </div>
  );
}

/**
 * A secret shown once, on the page after the post that made it (sealed in the session flash until
 * then): a panel `id`, its heading `id-title`, and what to copy.
 */
export function ShownOnce(props: { id: string; title: Child; children?: Child }): Html {
  return (
    <section class="panel" id={props.id} aria-labelledby={`${props.id}-title`}>
      <h2 id={`${props.id}-title`}>{props.title}</h2>
      {props.children}
    </section>
  );
}

export const formatDate = (d: Date | string | null | undefined): string =>
  d === null || d === undefined ? '' : (typeof d === 'string' ? d : d.toISOString()).slice(0, 10);

/** A moment in UTC, "2026-11-27 01:35 UTC"; in a narrow column it wraps between the date and the time only. */
export function Time({ value }: { value: Date }): Html {
  const iso = value.toISOString();
  return (
    <time datetime={iso} class="moment">
      <span class="nowrap">{iso.slice(0, 10)}</span> <span class="nowrap">{`${iso.slice(11, 16)} UTC`}</span>
    </time>
  );
}
