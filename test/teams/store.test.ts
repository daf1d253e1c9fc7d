/**
 * Teams and keys, the same tests on the SQLite registry and on PostgreSQL (each migrated by its own
 * schema folder): creation, the last admin key, rotation races and the key look-up of every request.
 */
import { expect } from 'chai';
import {
  countActiveKeys,
  countTeams,
  createTeam,
  findKeyOwner,
  findTeam,
  issueKey,
  listKeys,
  revokeKey,
  rotateKey,
  TeamNameTaken,
} from '../../src/teams/repository.js';
import { forEachDialect } from '../helpers/dialects.js';

describe('teams and keys store, on SQLite and PostgreSQL', function () {
  this.timeout(120_000);
  forEachDialect('teams', (open) => {
    it('creates a team with an admin key that finds its owner; a second team of that name is refused', async () => {
      const { db } = await open();
      expect(await countTeams(db)).to.equal(0);
      const { team, key } = await createTeam(db, 'acme');
      expect(await countTeams(db)).to.equal(1);
      expect(await findTeam(db, team.id)).to.deep.equal(team);
      const owner = await findKeyOwner(db, key.apiKey);
      expect(owner).to.include({ teamId: team.id, teamName: 'acme', keyId: key.keyId, keyName: 'default', holderId: key.keyId });
      expect(owner!.scopes).to.deep.equal(['admin']);
      expect(await findKeyOwner(db, `${key.apiKey}x`)).to.equal(undefined);
      let error: unknown;
      await createTeam(db, 'acme').catch((err) => (error = err));
      expect(error).to.be.instanceOf(TeamNameTaken);
    });

    it('creating one name from several instances at once makes one team; the others hear the name is taken', async () => {
      const { db, another } = await open();
      const instances = [db, another(), another()];
      const outcomes = await Promise.allSettled(instances.map((i) => createTeam(i, 'same')));
      expect(outcomes.filter((o) => o.status === 'fulfilled')).to.have.length(1);
      for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).to.be.instanceOf(TeamNameTaken);
      expect(await countTeams(db)).to.equal(1);
    });

    it('lists and counts working keys; a revoked key fails from the next look-up; the last admin key stays', async () => {
      const { db } = await open();
      const { team, key: first } = await createTeam(db, 'keys');
      const reader = await db.transaction((sql) => issueKey(sql, team.id, { name: 'reader', scopes: ['read'] }));
      const expired = await db.transaction((sql) => issueKey(sql, team.id, { name: 'old', scopes: ['read'], expiresAt: Date.now() - 1 }));
      expect((await listKeys(db, team.id)).map((k) => k.name)).to.have.members(['default', 'reader']);
      expect(await countActiveKeys(db, team.id)).to.equal(2);
      expect(await findKeyOwner(db, expired.apiKey)).to.equal(undefined);
      expect(await findKeyOwner(db, reader.apiKey)).to.include({ keyName: 'reader' });
      expect(await db.transaction((sql) => revokeKey(sql, team.id, reader.keyId))).to.equal('revoked');
      expect(await findKeyOwner(db, reader.apiKey)).to.equal(undefined);
      expect(await db.transaction((sql) => revokeKey(sql, team.id, first.keyId))).to.equal('last_admin');
      expect(await db.transaction((sql) => revokeKey(sql, team.id, 'key_none'))).to.equal('not_found');
    });

    it('two admin keys revoked at once from two instances: one goes, the other stays as the last admin', async () => {
      const { db, another } = await open();
      const { team, key: a } = await createTeam(db, 'admins');
      const b = await db.transaction((sql) => issueKey(sql, team.id, { name: 'second', scopes: ['admin'] }));
      const other = another();
      const outcomes = await Promise.all([
        db.transaction((sql) => revokeKey(sql, team.id, a.keyId)),
        other.transaction((sql) => revokeKey(sql, team.id, b.keyId)),
      ]);
      expect(outcomes.slice().sort()).to.deep.equal(['last_admin', 'revoked']);
      expect((await listKeys(db, team.id)).filter((k) => k.scopes.includes('admin'))).to.have.length(1);
    });

    it('a rotation keeps name, scopes and holder; two rotations of one key at once yield one new key', async () => {
      const { db, another } = await open();
      const { key } = await createTeam(db, 'rotate');
      const owner = (await findKeyOwner(db, key.apiKey))!;
      const rotations = await Promise.all([db, another()].map((i) => i.transaction((sql) => rotateKey(sql, owner))));
      const issued = rotations.filter((r) => r !== undefined);
      expect(issued).to.have.length(1);
      expect(await findKeyOwner(db, key.apiKey)).to.equal(undefined);
      expect(await findKeyOwner(db, issued[0]!.apiKey)).to.include({ keyName: 'default', holderId: owner.holderId });
    });
  });
});
