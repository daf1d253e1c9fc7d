/** MAX_ACTIVE_POLICIES_PER_TEAM: creating or re-activating a policy past it is a 409 naming `active`. */
import { expect } from 'chai';
import type { App } from '../../src/app.js';
import { api, appWith, errorOf, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';
import { type Team } from '../helpers/common.js';

const LIMITS = [{ kind: 'daily', amount: '10' }];

describeOnEachRegistry('the bound on active policies per team', () => {
  let app: App;
  before(() => {
    const { config } = testEnv();
    app = appWith([], { config: { ...config, evaluation: { ...config.evaluation, maxActivePoliciesPerTeam: 3 } } });
  });
  const create = (team: Team, body: object = {}) => api(app).post('/api/v1/policies').set(...team.auth).send({ name: 'p', limits: LIMITS, ...body });

  it('is 1,000 by default', () => {
    expect(testEnv().config.evaluation.maxActivePoliciesPerTeam).to.equal(1_000);
  });

  it('a policy past it is a 409 conflict naming active, and nothing is created; an inactive one is still created', async () => {
    const team = await newTeam();
    for (let i = 0; i < 3; i++) await create(team).expect(201);
    const res = await create(team).expect(409);
    const error = errorOf(res.body);
    expect(error.code).to.equal('conflict');
    expect(error.message).to.include('3 active policies').and.include('MAX_ACTIVE_POLICIES_PER_TEAM');
    expect(error.details).to.deep.equal([{ field: 'active', message: 'would make more than 3 policies of the team active' }]);
    const listed = await api(app).get('/api/v1/policies?limit=100').set(...team.auth).expect(200);
    expect(listed.body.data).to.have.length(3);
    // Nothing refused is in the management audit log either.
    const audit = await api(app).get('/api/v1/audit-log?limit=100').set(...team.auth).expect(200);
    expect(audit.body.data.filter((e: { action: string }) => e.action === 'policy.create')).to.have.length(3);

    await create(team, { active: false }).expect(201);
    // Another team has its own count.
    await create((await newTeam())).expect(201);
  });

  it('re-activating past it is a 409; changing an active policy is not; after one is deactivated or deleted there is room', async () => {
    const team = await newTeam();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await create(team).expect(201)).body.id);
    const inactive = (await create(team, { active: false }).expect(201)).body.id as string;
    const refused = await api(app).patch(`/api/v1/policies/${inactive}`).set(...team.auth).send({ active: true, name: 'again' }).expect(409);
    expect(errorOf(refused.body).details).to.deep.equal([{ field: 'active', message: 'would make more than 3 policies of the team active' }]);
    // Nothing of the refused change was applied.
    expect((await api(app).get(`/api/v1/policies/${inactive}`).set(...team.auth).expect(200)).body).to.include({ active: false, name: 'p' });
    // Changing an active one, even sending active: true again, is no new activation.
    await api(app).patch(`/api/v1/policies/${ids[0]}`).set(...team.auth).send({ active: true, limits: [{ kind: 'daily', amount: '20' }] }).expect(200);

    await api(app).patch(`/api/v1/policies/${ids[0]}`).set(...team.auth).send({ active: false }).expect(200);
    await api(app).patch(`/api/v1/policies/${inactive}`).set(...team.auth).send({ active: true }).expect(200);
    await create(team).expect(409);
    await api(app).delete(`/api/v1/policies/${ids[1]}`).set(...team.auth).expect(204);
    await create(team).expect(201);
  });
});
