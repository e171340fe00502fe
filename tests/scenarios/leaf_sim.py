"""A running Meituan Leaf, as far as the database sees it: Leaf's own allocation
transaction on its leaf_alloc row, using the row's `step` column, issuing the IDs of each
segment it gets. Runs beside segflake processes during a migration.

  leaf_sim.py --db pg|mysql --tag T --count N --out FILE

Leaf's SQL (LeafAllocDao, one transaction):
  UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = #{tag};
  SELECT biz_tag, max_id, step, description, update_time FROM leaf_alloc WHERE biz_tag = #{tag};
"""

from __future__ import annotations

import argparse
import array
import os
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.db == "pg":
        import psycopg

        conn = psycopg.connect(os.environ["SEGFLAKE_PG_DSN"])

        def segment() -> "tuple[int, int]":
            with conn.transaction():
                conn.execute("UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = %s", (args.tag,))
                row = conn.execute(
                    "SELECT biz_tag, max_id, step, description, update_time FROM leaf_alloc WHERE biz_tag = %s",
                    (args.tag,),
                ).fetchone()
            assert row is not None
            return int(row[1]), int(row[2])

    else:
        import pymysql

        conn = pymysql.connect(
            host=os.environ["SEGFLAKE_MYSQL_HOST"], port=int(os.environ["SEGFLAKE_MYSQL_PORT"]),
            user=os.environ["SEGFLAKE_MYSQL_USER"], password=os.environ["SEGFLAKE_MYSQL_PASSWORD"],
            database=os.environ["SEGFLAKE_MYSQL_DB"], autocommit=False,
        )

        def segment() -> "tuple[int, int]":
            with conn.cursor() as cur:
                cur.execute("UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = %s", (args.tag,))
                cur.execute(
                    "SELECT biz_tag, max_id, step, description, update_time FROM leaf_alloc WHERE biz_tag = %s",
                    (args.tag,),
                )
                row = cur.fetchone()
            conn.commit()
            assert row is not None
            return int(row[1]), int(row[2])

    ids = array.array("Q")
    while len(ids) < args.count:
        max_id, step = segment()
        # Leaf's segment: value starts at max_id - step, IDs up to max_id - 1
        ids.extend(range(max_id - step, min(max_id, max_id - step + args.count - len(ids))))
    with open(args.out, "wb") as f:
        f.write(ids.tobytes())
    print(f"leaf issued {len(ids)} IDs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
