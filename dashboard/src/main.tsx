/**
 * The dashboard: a single page served by the service at / and /dashboard/…, talking only to the
 * public API with the key pasted at sign-in.
 */
import { render, type ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { AccessContext, keyHasScope } from './access';
import { api, whenUnauthorized } from './api';
import { fetchAssets, ALL_TIME, TeamAssetsContext } from './assets';
import { denominationOf, UNKNOWN, type Denomination } from './money';
import type { Team } from './types';
import { AgentPage, Agents } from './pages/agents';
import { AlertPage, Alerts } from './pages/alerts';
import { AuditLog } from './pages/audit-log';
import { AuthorizationPage, Authorizations } from './pages/authorizations';
import { Budgets } from './pages/budgets';
import { Overview } from './pages/overview';
import { Policies, PolicyPage } from './pages/policies';
import { RecordPage, Records } from './pages/records';
import { TeamPage, WebhookPage } from './pages/team';
import { Settlements } from './pages/settlements';
import { SignIn } from './pages/sign-in';
import { Rates } from './pages/rates';
import { href, interceptLinks, navigate, useLocation } from './router';
import { currentSession, forgetSession, saveSession, type Scope, type Session } from './session';
import './styles.css';

/** The menu; a section that needs a scope is left out for a key without it (not shown, then refused). */
const SECTIONS: { path: string; label: string; needs?: Scope }[] = [
  { path: '', label: 'Overview' },
  { path: 'agents', label: 'Agents' },
  { path: 'alerts', label: 'Alerts' },
  { path: 'authorizations', label: 'Authorizations' },
  { path: 'records', label: 'Records' },
  { path: 'settlements', label: 'Settlements' },
  { path: 'budgets', label: 'Budgets' },
  { path: 'policies', label: 'Policies' },
  { path: 'rates', label: 'Rates' },
  { path: 'team', label: 'Team' },
  { path: 'audit-log', label: 'Audit log', needs: 'admin' },
];

function Page({ path }: { path: string }) {
  const [section, id, sub] = path.split('/').map(safeDecode);
  switch (section) {
    case '':
      return <Overview />;
    case 'agents':
      return id ? <AgentPage agentId={id} /> : <Agents />;
    case 'alerts':
      return id ? <AlertPage alertId={id} /> : <Alerts />;
    case 'authorizations':
      return id ? <AuthorizationPage authorizationId={id} /> : <Authorizations />;
    case 'records':
      return id ? <RecordPage recordId={id} /> : <Records />;
    case 'settlements':
      return id ? <NotFound /> : <Settlements />;
    case 'budgets':
      return id ? <NotFound /> : <Budgets />;
    case 'audit-log':
      return id ? <NotFound /> : <AuditLog />;
    case 'rates':
      return id ? <NotFound /> : <Rates />;
    case 'policies':
      return id ? <PolicyPage policyId={id} /> : <Policies />;
    case 'team':
      if (id === 'webhooks' && sub) return <WebhookPage webhookId={sub} />;
      if (!id) return <TeamPage />;
      return <NotFound />;
    default:
      return <NotFound />;
  }
}

/** A path segment as typed: a malformed escape is kept as it is rather than breaking the page. */
function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function NotFound() {
  return (
    <section class="panel">
      <h1>Not found</h1>
      <p>
        There is no page here. <a href={href()}>Back to the overview</a>.
      </p>
    </section>
  );
}

function App() {
  const [session, setSession] = useState(currentSession);
  const [notice, setNotice] = useState<string | undefined>();
  const location = useLocation();
  useEffect(() => {
    whenUnauthorized(() => {
      setNotice('Your key stopped working (revoked or expired). Sign in again.');
      setSession(undefined);
    });
  }, []);
  if (!session) return <SignIn notice={notice} onSignedIn={() => (setNotice(undefined), setSession(currentSession()))} />;
  const signOut = () => {
    forgetSession();
    setSession(undefined);
    navigate('/dashboard/', { replace: true });
  };
  const section = location.path.split('/')[0] ?? '';
  return (
    <SignedIn session={session} onSession={setSession}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href()}>
          spendscope
        </a>
        <nav aria-label="Sections">
          {SECTIONS.filter((s) => !s.needs || keyHasScope(session.access, s.needs)).map((s) => (
            <a key={s.path} href={s.path ? href(s.path) : href()} aria-current={section === s.path ? 'page' : undefined}>
              {s.label}
            </a>
          ))}
        </nav>
        <span class="team" title="Signed-in team">
          {session.teamName}
        </span>
        <button type="button" class="sign-out" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Page path={location.path} />
      </main>
    </SignedIn>
  );
}

/**
 * What every page of a signed-in key needs to know: what the key may change (from GET /team,
 * kept with the session), and which assets the team's records are in (for all-time figures).
 */
function SignedIn({ session, onSession, children }: { session: Session; onSession: (s: Session) => void; children: ComponentChildren }) {
  const [assets, setAssets] = useState<Denomination>(UNKNOWN);
  useEffect(() => {
    const controller = new AbortController();
    if (!session.access) {
      api<Team>('GET', '/team', { signal: controller.signal }).then((team) => {
        const next = { ...session, teamName: team.name, access: team.key };
        saveSession(next);
        onSession(next);
      }, () => {});
    }
    fetchAssets(ALL_TIME, controller.signal).then((rows) => setAssets(denominationOf(rows.map((r) => r.key))), () => {});
    return () => controller.abort();
  }, [session.apiKey]);
  return (
    <AccessContext.Provider value={session.access}>
      <TeamAssetsContext.Provider value={assets}>{children}</TeamAssetsContext.Provider>
    </AccessContext.Provider>
  );
}

interceptLinks();
render(<App />, document.getElementById('app')!);
