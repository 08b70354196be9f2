import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mysqlConnection } from '../../../../services/db/stores/mysql-connection.js';
import { storeOfUrl } from '../../../../services/db/stores/store-of-url.js';

describe('the store a URL names', () => {
  it('is PostgreSQL for postgresql:// and postgres://, MySQL for mysql:// and mariadb://, none otherwise', () => {
    assert.equal(storeOfUrl('postgresql://u@h/db'), 'postgresql');
    assert.equal(storeOfUrl('postgres://u@h/db'), 'postgresql');
    assert.equal(storeOfUrl('mysql://u@h/db'), 'mysql');
    assert.equal(storeOfUrl('MariaDB://u@h/db'), 'mysql');
    for (const url of ['sqlite://file.db', 'http://h/db', 'mysql:/h/db', 'postgresql', '']) {
      assert.equal(storeOfUrl(url), undefined, url);
    }
  });

  it("reads a MySQL URL into the driver's settings, credentials decoded and options typed", () => {
    assert.deepEqual(
      mysqlConnection(
        'mysql://app%40orders:p%3Ass%2Fword@db.internal:3307/orders?ssl=true&connectTimeout=2000&charset=utf8mb4',
      ),
      {
        host: 'db.internal',
        port: 3307,
        user: 'app@orders',
        password: 'p:ss/word',
        database: 'orders',
        ssl: true,
        connectTimeout: 2000,
        charset: 'utf8mb4',
      },
    );
    assert.deepEqual(mysqlConnection('mariadb://root@127.0.0.1'), {
      host: '127.0.0.1',
      port: 3306,
      user: 'root',
      password: undefined,
      database: undefined,
    });
  });
});
