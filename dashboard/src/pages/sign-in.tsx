/**
 * Sign-in: paste an API key. It is checked against GET /team before it is kept (in this tab's
 * sessionStorage only, see session.ts). A read key is enough to look around; changes need admin.
 */
import { useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { saveSession } from '../session';
import type { Team } from '../types';

export function SignIn({ onSignedIn, notice }: { onSignedIn: () => void; notice?: string }) {
  const [key, setKey] = useState('');
  const [problem, setProblem] = useState(notice ?? '');
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const apiKey = key.trim();
    if (!apiKey) return setProblem('Paste an API key first.');
    setBusy(true);
    try {
      const team = await api<Team>('GET', '/team', { apiKey });
      saveSession({ apiKey, teamName: team.name, access: team.key });
      setKey('');
      onSignedIn();
    } catch (err) {
      setProblem(
        err instanceof ApiError && err.status === 401
          ? 'That key was not accepted: it is unknown, revoked or expired.'
          : err instanceof ApiError
            ? err.message
            : 'Could not sign in.',
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="sign-in" id="main">
      <form onSubmit={submit} aria-describedby="sign-in-help">
        <h1>spendscope</h1>
        <p id="sign-in-help">
          Sign in with an API key of your team. A key with the <code>read</code> scope is enough to look; changing policies, alerts, keys
          and webhooks needs an <code>admin</code> key. The key is kept in this browser tab only, until you sign out or close it.
        </p>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          placeholder="ss_…"
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          aria-invalid={problem ? true : undefined}
          aria-errormessage={problem ? 'sign-in-error' : undefined}
        />
        {problem && (
          <p id="sign-in-error" class="field-error" role="alert">
            {problem}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
