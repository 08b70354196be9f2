// The bench counts a MySQL/MariaDB server's CPU only when it runs on this machine, where /proc shows it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isOnThisMachine } from '../../../../tools/bench/cpu-accounting.js';

describe("the bench's CPU accounting", () => {
  it('takes a server on the loopback for one of this machine, and no other', () => {
    for (const url of ['mysql://root@127.0.0.1:3306', 'mysql://root@localhost/test', 'mysql://u:p@[::1]:3306/x']) {
      assert.equal(isOnThisMachine(url), true, url);
    }
    for (const url of ['mysql://root@db.internal:3306', 'mysql://root@10.0.0.5', 'not a url', '']) {
      assert.equal(isOnThisMachine(url), false, url);
    }
  });
});
