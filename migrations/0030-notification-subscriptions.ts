// Issue 21: the notification subscriptions — for every project and group, the users who hold a
// setting there (the watchers and custom holders, at the target or any ancestor) with their
// effective settings there — kept by the database in the transaction of every write that changes
// them, so the recipients statement reads a target's list instead of finding its holders among the
// members of the tree.
//
// notification_subscriptions_refresh(users, groups, projects), which recomputes the rows of those
// users (null: every user) on those groups and projects and everything below them, and
// notification_subscription_rows(groups, projects), the rows from scratch, carry the rule: their
// bodies are GENERATED from the application's SQL fragments
// (service/domain/notifications/subscriptions.ts, subscriptionFunctionBodies()) and pasted here, and
// the application refuses a database whose bodies differ (assertSubscriptionRulesCurrent). The
// refresh's statements are planned once per connection (force_generic_plan). The rest is
// bookkeeping without a rule:
// - triggers on notification_settings and members (a changed row's user, below its group or
//   project; a global row: below every group and project the user has a row or membership at),
//   and on groups and projects (a new one, or a moved one: every user, below it) call it once per
//   statement;
// - advisory locks make concurrent refreshes of the same user (or any structural change) wait for
//   each other, so each recomputes from what the other committed and neither leaves stale rows:
//   a user's refresh holds lock (2103, 0) shared and (2104, user id) exclusive; a refresh of every
//   user, or of more than 64 at once, holds (2103, 0) exclusive.
// Frozen in time: never import application code.
import { type Kysely, sql } from 'kysely';

const ROWS = `
  with recursive
    sources (target_type, target_id, source_type, source_id, full_path, parent_id, depth) as (
      select 'project'::text, walk_p.id, 'project'::text, walk_p.id, walk_p.path_with_namespace, walk_p.group_id, 0
        from projects walk_p where walk_p.id in (select unnest(p_projects))
      union all
      select 'group'::text, walk_g.id, 'group'::text, walk_g.id, walk_g.full_path, walk_g.parent_id, 0
        from groups walk_g where walk_g.id in (select unnest(p_groups))
      union all
      select walk_s.target_type, walk_s.target_id, 'group'::text, walk_up.id, walk_up.full_path, walk_up.parent_id,
             walk_s.depth + 1
        from sources walk_s join groups walk_up on walk_up.id = walk_s.parent_id
       where walk_s.depth < 100
    ),


  global_holders as (
    select user_id, level from notification_settings
     where group_id is null and project_id is null and level = any(array['watch', 'custom']::text[])
  ),
  rows_there as (
    select s.target_type, s.target_id, ns.user_id, s.source_type, s.source_id, s.full_path, s.depth, ns.level
      from sources s join notification_settings ns on ns.group_id = s.source_id
     where s.source_type = 'group' and ns.level = any(array['watch', 'custom', 'global']::text[])
    union all
    select s.target_type, s.target_id, ns.user_id, s.source_type, s.source_id, s.full_path, s.depth, ns.level
      from sources s join notification_settings ns on ns.project_id = s.source_id
     where s.source_type = 'project' and ns.level = any(array['watch', 'custom', 'global']::text[])
  ),
  holders as (
    select r.target_type, r.target_id, r.user_id, r.source_type, r.source_id, r.full_path, r.depth,
           r.level as level_there, gh.level as global_level
      from rows_there r left join global_holders gh on gh.user_id = r.user_id
     where (r.level = any(array['watch', 'custom']::text[])
    or (coalesce(r.level, 'global') = 'global' and gh.level = any(array['watch', 'custom']::text[])))
    union all
    -- From each global holder to their memberships at the sources (LATERAL: an index probe per
    -- holder, never a scan of the tree's members), where they have no row.
    select s.target_type, s.target_id, gh.user_id, s.source_type, s.source_id, s.full_path, s.depth, null, gh.level
      from global_holders gh
      cross join lateral (
        select 'group'::text as source_type, m.group_id as source_id from members m
         where m.user_id = gh.user_id and m.group_id in (select source_id from sources where source_type = 'group')
           and not exists (select 1 from notification_settings x where x.user_id = m.user_id and x.group_id = m.group_id)
        union all
        select 'project', m.project_id from members m
         where m.user_id = gh.user_id and m.project_id in (select source_id from sources where source_type = 'project')
           and not exists (select 1 from notification_settings x where x.user_id = m.user_id and x.project_id = m.project_id)
      ) ms
      join sources s on s.source_type = ms.source_type and s.source_id = ms.source_id
     where (null::text = any(array['watch', 'custom']::text[])
    or (coalesce(null::text, 'global') = 'global' and gh.level = any(array['watch', 'custom']::text[])))
  ),

  at_sources as (
    select s.target_type, s.target_id, s.source_type, s.source_id, s.full_path, s.depth,
    ns.user_id, ns.level, ns.notification_email, "ns"."new_release" as "new_release", "ns"."new_note" as "new_note", "ns"."new_issue" as "new_issue", "ns"."reopen_issue" as "reopen_issue", "ns"."close_issue" as "close_issue", "ns"."reassign_issue" as "reassign_issue", "ns"."issue_due" as "issue_due", "ns"."new_merge_request" as "new_merge_request", "ns"."push_to_merge_request" as "push_to_merge_request", "ns"."reopen_merge_request" as "reopen_merge_request", "ns"."close_merge_request" as "close_merge_request", "ns"."reassign_merge_request" as "reassign_merge_request", "ns"."change_reviewer_merge_request" as "change_reviewer_merge_request", "ns"."merge_merge_request" as "merge_merge_request", "ns"."failed_pipeline" as "failed_pipeline", "ns"."fixed_pipeline" as "fixed_pipeline", "ns"."success_pipeline" as "success_pipeline", "ns"."moved_project" as "moved_project", "ns"."merge_when_pipeline_succeeds" as "merge_when_pipeline_succeeds" from sources s join notification_settings ns on ns.group_id = s.source_id
     where s.source_type = 'group' and ns.user_id in (select user_id from holders)
    union all
    select s.target_type, s.target_id, s.source_type, s.source_id, s.full_path, s.depth,
    ns.user_id, ns.level, ns.notification_email, "ns"."new_release" as "new_release", "ns"."new_note" as "new_note", "ns"."new_issue" as "new_issue", "ns"."reopen_issue" as "reopen_issue", "ns"."close_issue" as "close_issue", "ns"."reassign_issue" as "reassign_issue", "ns"."issue_due" as "issue_due", "ns"."new_merge_request" as "new_merge_request", "ns"."push_to_merge_request" as "push_to_merge_request", "ns"."reopen_merge_request" as "reopen_merge_request", "ns"."close_merge_request" as "close_merge_request", "ns"."reassign_merge_request" as "reassign_merge_request", "ns"."change_reviewer_merge_request" as "change_reviewer_merge_request", "ns"."merge_merge_request" as "merge_merge_request", "ns"."failed_pipeline" as "failed_pipeline", "ns"."fixed_pipeline" as "fixed_pipeline", "ns"."success_pipeline" as "success_pipeline", "ns"."moved_project" as "moved_project", "ns"."merge_when_pipeline_succeeds" as "merge_when_pipeline_succeeds" from sources s join notification_settings ns on ns.project_id = s.source_id
     where s.source_type = 'project' and ns.user_id in (select user_id from holders)),
  nearest as (
    select a.target_type, a.target_id, a.user_id, (array['disabled', 'participating', 'watch', 'global', 'mention', 'custom']::text[])[((a.k >> 36) & 15) + 1] as level,
           s.source_type, s.source_id, s.full_path, substr(a.e, 4) as group_email, ((a.k >> 0) & 1) = 1 as "new_release", ((a.k >> 1) & 1) = 1 as "new_note", ((a.k >> 2) & 1) = 1 as "new_issue", ((a.k >> 3) & 1) = 1 as "reopen_issue", ((a.k >> 4) & 1) = 1 as "close_issue", ((a.k >> 5) & 1) = 1 as "reassign_issue", ((a.k >> 6) & 1) = 1 as "issue_due", ((a.k >> 7) & 1) = 1 as "new_merge_request", ((a.k >> 8) & 1) = 1 as "push_to_merge_request", ((a.k >> 9) & 1) = 1 as "reopen_merge_request", ((a.k >> 10) & 1) = 1 as "close_merge_request", ((a.k >> 11) & 1) = 1 as "reassign_merge_request", ((a.k >> 12) & 1) = 1 as "change_reviewer_merge_request", ((a.k >> 13) & 1) = 1 as "merge_merge_request", ((a.k >> 14) & 1) = 1 as "failed_pipeline", ((a.k >> 15) & 1) = 1 as "fixed_pipeline", ((a.k >> 16) & 1) = 1 as "success_pipeline", ((a.k >> 17) & 1) = 1 as "moved_project", ((a.k >> 18) & 1) = 1 as "merge_when_pipeline_succeeds"
      from (
        select target_type, target_id, user_id, min((depth::bigint << 40) + ((array_position(array['disabled', 'participating', 'watch', 'global', 'mention', 'custom']::text[], level)::bigint - 1) << 36) + case when "new_release" then 1::bigint else 0 end + case when "new_note" then 2::bigint else 0 end + case when "new_issue" then 4::bigint else 0 end + case when "reopen_issue" then 8::bigint else 0 end + case when "close_issue" then 16::bigint else 0 end + case when "reassign_issue" then 32::bigint else 0 end + case when "issue_due" then 64::bigint else 0 end + case when "new_merge_request" then 128::bigint else 0 end + case when "push_to_merge_request" then 256::bigint else 0 end + case when "reopen_merge_request" then 512::bigint else 0 end + case when "close_merge_request" then 1024::bigint else 0 end + case when "reassign_merge_request" then 2048::bigint else 0 end + case when "change_reviewer_merge_request" then 4096::bigint else 0 end + case when "merge_merge_request" then 8192::bigint else 0 end + case when "failed_pipeline" then 16384::bigint else 0 end + case when "fixed_pipeline" then 32768::bigint else 0 end + case when "success_pipeline" then 65536::bigint else 0 end + case when "moved_project" then 131072::bigint else 0 end + case when "merge_when_pipeline_succeeds" then 262144::bigint else 0 end) filter (where level <> 'global') as k,
               min(lpad(depth::text, 3, '0') || notification_email)
                 filter (where source_type = 'group' and notification_email is not null) as e
          from at_sources group by target_type, target_id, user_id
      ) a
      left join sources s on s.target_type = a.target_type and s.target_id = a.target_id and s.depth = (a.k >> 40)
  ),
  held as (select distinct target_type, target_id, user_id from holders)
  select h.target_type, h.target_id, h.user_id,
  coalesce(n.level, nullif(g.level, 'global'), 'participating') as level,
  case when n.level is null then 'global' else n.source_type end as source_type,
  n.source_id,
         (case when coalesce(case when n.level is not null then "n"."new_release" when g.level <> 'global' then "g"."new_release" end, false) then 1 else 0 end + case when coalesce(case when n.level is not null then "n"."new_note" when g.level <> 'global' then "g"."new_note" end, false) then 2 else 0 end + case when coalesce(case when n.level is not null then "n"."new_issue" when g.level <> 'global' then "g"."new_issue" end, false) then 4 else 0 end + case when coalesce(case when n.level is not null then "n"."reopen_issue" when g.level <> 'global' then "g"."reopen_issue" end, false) then 8 else 0 end + case when coalesce(case when n.level is not null then "n"."close_issue" when g.level <> 'global' then "g"."close_issue" end, false) then 16 else 0 end + case when coalesce(case when n.level is not null then "n"."reassign_issue" when g.level <> 'global' then "g"."reassign_issue" end, false) then 32 else 0 end + case when coalesce(case when n.level is not null then "n"."issue_due" when g.level <> 'global' then "g"."issue_due" end, false) then 64 else 0 end + case when coalesce(case when n.level is not null then "n"."new_merge_request" when g.level <> 'global' then "g"."new_merge_request" end, false) then 128 else 0 end + case when coalesce(case when n.level is not null then "n"."push_to_merge_request" when g.level <> 'global' then "g"."push_to_merge_request" end, false) then 256 else 0 end + case when coalesce(case when n.level is not null then "n"."reopen_merge_request" when g.level <> 'global' then "g"."reopen_merge_request" end, false) then 512 else 0 end + case when coalesce(case when n.level is not null then "n"."close_merge_request" when g.level <> 'global' then "g"."close_merge_request" end, false) then 1024 else 0 end + case when coalesce(case when n.level is not null then "n"."reassign_merge_request" when g.level <> 'global' then "g"."reassign_merge_request" end, false) then 2048 else 0 end + case when coalesce(case when n.level is not null then "n"."change_reviewer_merge_request" when g.level <> 'global' then "g"."change_reviewer_merge_request" end, false) then 4096 else 0 end + case when coalesce(case when n.level is not null then "n"."merge_merge_request" when g.level <> 'global' then "g"."merge_merge_request" end, false) then 8192 else 0 end + case when coalesce(case when n.level is not null then "n"."failed_pipeline" when g.level <> 'global' then "g"."failed_pipeline" end, false) then 16384 else 0 end + case when coalesce(case when n.level is not null then "n"."fixed_pipeline" when g.level <> 'global' then "g"."fixed_pipeline" end, false) then 32768 else 0 end + case when coalesce(case when n.level is not null then "n"."success_pipeline" when g.level <> 'global' then "g"."success_pipeline" end, false) then 65536 else 0 end + case when coalesce(case when n.level is not null then "n"."moved_project" when g.level <> 'global' then "g"."moved_project" end, false) then 131072 else 0 end + case when coalesce(case when n.level is not null then "n"."merge_when_pipeline_succeeds" when g.level <> 'global' then "g"."merge_when_pipeline_succeeds" end, false) then 262144 else 0 end)::integer as flags, n.group_email, g.notification_email as global_email,
         exists (
    select 1 from sources ms join members m
        on (ms.source_type = 'group' and m.group_id = ms.source_id) or (ms.source_type = 'project' and m.project_id = ms.source_id)
     where ms.target_type = h.target_type and ms.target_id = h.target_id and m.user_id = h.user_id) as member
    from held h
    left join nearest n on n.user_id = h.user_id and n.target_type = h.target_type and n.target_id = h.target_id
    left join notification_settings g on g.user_id = h.user_id and g.group_id is null and g.project_id is null`;

const REFRESH = `
  declare
    t_groups bigint[];
    t_projects bigint[];
    v_user bigint;
  begin
    if p_users is null or cardinality(p_users) > 64 then
      perform pg_advisory_xact_lock(2103, 0);
    else
      perform pg_advisory_xact_lock_shared(2103, 0);
      for v_user in select distinct x from unnest(p_users) x order by 1 loop
        perform pg_advisory_xact_lock(2104, (v_user % 2147483648)::integer);
      end loop;
    end if;
    with recursive below (id) as (
      select g.id from groups g where g.id = any(p_groups)
      union
      select g.id from groups g join below b on g.parent_id = b.id
    )
    select coalesce(array_agg(id), '{}') into t_groups from below;
    select coalesce(array_agg(id), '{}') into t_projects from projects where id = any(p_projects) or group_id = any(t_groups);
    if cardinality(t_groups) = 0 and cardinality(t_projects) = 0 then
      return;
    end if;
    if p_users is null then

    delete from notification_subscriptions s
     where (s.group_id = any(t_groups) or s.project_id = any(t_projects));
    insert into notification_subscriptions (user_id, group_id, project_id, level, source_type, source_id, flags, group_email, global_email, member)
    select r.user_id, case when r.target_type = 'group' then r.target_id end,
           case when r.target_type = 'project' then r.target_id end,
           r.level, r.source_type, r.source_id, r.flags, r.group_email, r.global_email, r.member
      from (
  with recursive
    sources (target_type, target_id, source_type, source_id, full_path, parent_id, depth) as (
      select 'project'::text, walk_p.id, 'project'::text, walk_p.id, walk_p.path_with_namespace, walk_p.group_id, 0
        from projects walk_p where walk_p.id in (select unnest(t_projects))
      union all
      select 'group'::text, walk_g.id, 'group'::text, walk_g.id, walk_g.full_path, walk_g.parent_id, 0
        from groups walk_g where walk_g.id in (select unnest(t_groups))
      union all
      select walk_s.target_type, walk_s.target_id, 'group'::text, walk_up.id, walk_up.full_path, walk_up.parent_id,
             walk_s.depth + 1
        from sources walk_s join groups walk_up on walk_up.id = walk_s.parent_id
       where walk_s.depth < 100
    ),


  global_holders as (
    select user_id, level from notification_settings
     where group_id is null and project_id is null and level = any(array['watch', 'custom']::text[])
  ),
  rows_there as (
    select s.target_type, s.target_id, ns.user_id, s.source_type, s.source_id, s.full_path, s.depth, ns.level
      from sources s join notification_settings ns on ns.group_id = s.source_id
     where s.source_type = 'group' and ns.level = any(array['watch', 'custom', 'global']::text[])
    union all
    select s.target_type, s.target_id, ns.user_id, s.source_type, s.source_id, s.full_path, s.depth, ns.level
      from sources s join notification_settings ns on ns.project_id = s.source_id
     where s.source_type = 'project' and ns.level = any(array['watch', 'custom', 'global']::text[])
  ),
  holders as (
    select r.target_type, r.target_id, r.user_id, r.source_type, r.source_id, r.full_path, r.depth,
           r.level as level_there, gh.level as global_level
      from rows_there r left join global_holders gh on gh.user_id = r.user_id
     where (r.level = any(array['watch', 'custom']::text[])
    or (coalesce(r.level, 'global') = 'global' and gh.level = any(array['watch', 'custom']::text[])))
    union all
    -- From each global holder to their memberships at the sources (LATERAL: an index probe per
    -- holder, never a scan of the tree's members), where they have no row.
    select s.target_type, s.target_id, gh.user_id, s.source_type, s.source_id, s.full_path, s.depth, null, gh.level
      from global_holders gh
      cross join lateral (
        select 'group'::text as source_type, m.group_id as source_id from members m
         where m.user_id = gh.user_id and m.group_id in (select source_id from sources where source_type = 'group')
           and not exists (select 1 from notification_settings x where x.user_id = m.user_id and x.group_id = m.group_id)
        union all
        select 'project', m.project_id from members m
         where m.user_id = gh.user_id and m.project_id in (select source_id from sources where source_type = 'project')
           and not exists (select 1 from notification_settings x where x.user_id = m.user_id and x.project_id = m.project_id)
      ) ms
      join sources s on s.source_type = ms.source_type and s.source_id = ms.source_id
     where (null::text = any(array['watch', 'custom']::text[])
    or (coalesce(null::text, 'global') = 'global' and gh.level = any(array['watch', 'custom']::text[])))
  ),

  at_sources as (
    select s.target_type, s.target_id, s.source_type, s.source_id, s.full_path, s.depth,
    ns.user_id, ns.level, ns.notification_email, "ns"."new_release" as "new_release", "ns"."new_note" as "new_note", "ns"."new_issue" as "new_issue", "ns"."reopen_issue" as "reopen_issue", "ns"."close_issue" as "close_issue", "ns"."reassign_issue" as "reassign_issue", "ns"."issue_due" as "issue_due", "ns"."new_merge_request" as "new_merge_request", "ns"."push_to_merge_request" as "push_to_merge_request", "ns"."reopen_merge_request" as "reopen_merge_request", "ns"."close_merge_request" as "close_merge_request", "ns"."reassign_merge_request" as "reassign_merge_request", "ns"."change_reviewer_merge_request" as "change_reviewer_merge_request", "ns"."merge_merge_request" as "merge_merge_request", "ns"."failed_pipeline" as "failed_pipeline", "ns"."fixed_pipeline" as "fixed_pipeline", "ns"."success_pipeline" as "success_pipeline", "ns"."moved_project" as "moved_project", "ns"."merge_when_pipeline_succeeds" as "merge_when_pipeline_succeeds" from sources s join notification_settings ns on ns.group_id = s.source_id
     where s.source_type = 'group' and ns.user_id in (select user_id from holders)
    union all
    select s.target_type, s.target_id, s.source_type, s.source_id, s.full_path, s.depth,
    ns.user_id, ns.level, ns.notification_email, "ns"."new_release" as "new_release", "ns"."new_note" as "new_note", "ns"."new_issue" as "new_issue", "ns"."reopen_issue" as "reopen_issue", "ns"."close_issue" as "close_issue", "ns"."reassign_issue" as "reassign_issue", "ns"."issue_due" as "issue_due", "ns"."new_merge_request" as "new_merge_request", "ns"."push_to_merge_request" as "push_to_merge_request", "ns"."reopen_merge_request" as "reopen_merge_request", "ns"."close_merge_request" as "close_merge_request", "ns"."reassign_merge_request" as "reassign_merge_request", "ns"."change_reviewer_merge_request" as "change_reviewer_merge_request", "ns"."merge_merge_request" as "merge_merge_request", "ns"."failed_pipeline" as "failed_pipeline", "ns"."fixed_pipeline" as "fixed_pipeline", "ns"."success_pipeline" as "success_pipeline", "ns"."moved_project" as "moved_project", "ns"."merge_when_pipeline_succeeds" as "merge_when_pipeline_succeeds" from sources s join notification_settings ns on ns.project_id = s.source_id
     where s.source_type = 'project' and ns.user_id in (select user_id from holders)),
  nearest as (
    select a.target_type, a.target_id, a.user_id, (array['disabled', 'participating', 'watch', 'global', 'mention', 'custom']::text[])[((a.k >> 36) & 15) + 1] as level,
           s.source_type, s.source_id, s.full_path, substr(a.e, 4) as group_email, ((a.k >> 0) & 1) = 1 as "new_release", ((a.k >> 1) & 1) = 1 as "new_note", ((a.k >> 2) & 1) = 1 as "new_issue", ((a.k >> 3) & 1) = 1 as "reopen_issue", ((a.k >> 4) & 1) = 1 as "close_issue", ((a.k >> 5) & 1) = 1 as "reassign_issue", ((a.k >> 6) & 1) = 1 as "issue_due", ((a.k >> 7) & 1) = 1 as "new_merge_request", ((a.k >> 8) & 1) = 1 as "push_to_merge_request", ((a.k >> 9) & 1) = 1 as "reopen_merge_request", ((a.k >> 10) & 1) = 1 as "close_merge_request", ((a.k >> 11) & 1) = 1 as "reassign_merge_request", ((a.k >> 12) & 1) = 1 as "change_reviewer_merge_request", ((a.k >> 13) & 1) = 1 as "merge_merge_request", ((a.k >> 14) & 1) = 1 as "failed_pipeline", ((a.k >> 15) & 1) = 1 as "fixed_pipeline", ((a.k >> 16) & 1) = 1 as "success_pipeline", ((a.k >> 17) & 1) = 1 as "moved_project", ((a.k >> 18) & 1) = 1 as "merge_when_pipeline_succeeds"
      from (
        select target_type, target_id, user_id, min((depth::bigint << 40) + ((array_position(array['disabled', 'participating', 'watch', 'global', 'mention', 'custom']::text[], level)::bigint - 1) << 36) + case when "new_release" then 1::bigint else 0 end + case when "new_note" then 2::bigint else 0 end + case when "new_issue" then 4::bigint else 0 end + case when "reopen_issue" then 8::bigint else 0 end + case when "close_issue" then 16::bigint else 0 end + case when "reassign_issue" then 32::bigint else 0 end + case when "issue_due" then 64::bigint else 0 end + case when "new_merge_request" then 128::bigint else 0 end + case when "push_to_merge_request" then 256::bigint else 0 end + case when "reopen_merge_request" then 512::bigint else 0 end + case when "close_merge_request" then 1024::bigint else 0 end + case when "reassign_merge_request" then 2048::bigint else 0 end + case when "change_reviewer_merge_request" then 4096::bigint else 0 end + case when "merge_merge_request" then 8192::bigint else 0 end + case when "failed_pipeline" then 16384::bigint else 0 end + case when "fixed_pipeline" then 32768::bigint else 0 end + case when "success_pipeline" then 65536::bigint else 0 end + case when "moved_project" then 131072::bigint else 0 end + case when "merge_when_pipeline_succeeds" then 262144::bigint else 0 end) filter (where level <> 'global') as k,
               min(lpad(depth::text, 3, '0') || notification_email)
                 filter (where source_type = 'group' and notification_email is not null) as e
          from at_sources group by target_type, target_id, user_id
      ) a
      left join sources s on s.target_type = a.target_type and s.target_id = a.target_id and s.depth = (a.k >> 40)
  ),
  held as (select distinct target_type, target_id, user_id from holders)
  select h.target_type, h.target_id, h.user_id,
  coalesce(n.level, nullif(g.level, 'global'), 'participating') as level,
  case when n.level is null then 'global' else n.source_type end as source_type,
  n.source_id,
         (case when coalesce(case when n.level is not null then "n"."new_release" when g.level <> 'global' then "g"."new_release" end, false) then 1 else 0 end + case when coalesce(case when n.level is not null then "n"."new_note" when g.level <> 'global' then "g"."new_note" end, false) then 2 else 0 end + case when coalesce(case when n.level is not null then "n"."new_issue" when g.level <> 'global' then "g"."new_issue" end, false) then 4 else 0 end + case when coalesce(case when n.level is not null then "n"."reopen_issue" when g.level <> 'global' then "g"."reopen_issue" end, false) then 8 else 0 end + case when coalesce(case when n.level is not null then "n"."close_issue" when g.level <> 'global' then "g"."close_issue" end, false) then 16 else 0 end + case when coalesce(case when n.level is not null then "n"."reassign_issue" when g.level <> 'global' then "g"."reassign_issue" end, false) then 32 else 0 end + case when coalesce(case when n.level is not null then "n"."issue_due" when g.level <> 'global' then "g"."issue_due" end, false) then 64 else 0 end + case when coalesce(case when n.level is not null then "n"."new_merge_request" when g.level <> 'global' then "g"."new_merge_request" end, false) then 128 else 0 end + case when coalesce(case when n.level is not null then "n"."push_to_merge_request" when g.level <> 'global' then "g"."push_to_merge_request" end, false) then 256 else 0 end + case when coalesce(case when n.level is not null then "n"."reopen_merge_request" when g.level <> 'global' then "g"."reopen_merge_request" end, false) then 512 else 0 end + case when coalesce(case when n.level is not null then "n"."close_merge_request" when g.level <> 'global' then "g"."close_merge_request" end, false) then 1024 else 0 end + case when coalesce(case when n.level is not null then "n"."reassign_merge_request" when g.level <> 'global' then "g"."reassign_merge_request" end, false) then 2048 else 0 end + case when coalesce(case when n.level is not null then "n"."change_reviewer_merge_request" when g.level <> 'global' then "g"."change_reviewer_merge_request" end, false) then 4096 else 0 end + case when coalesce(case when n.level is not null then "n"."merge_merge_request" when g.level <> 'global' then "g"."merge_merge_request" end, false) then 8192 else 0 end + case when coalesce(case when n.level is not null then "n"."failed_pipeline" when g.level <> 'global' then "g"."failed_pipeline" end, false) then 16384 else 0 end + case when coalesce(case when n.level is not null then "n"."fixed_pipeline" when g.level <> 'global' then "g"."fixed_pipeline" end, false) then 32768 else 0 end + case when coalesce(case when n.level is not null then "n"."success_pipeline" when g.level <> 'global' then "g"."success_pipeline" end, false) then 65536 else 0 end + case when coalesce(case when n.level is not null then "n"."moved_project" when g.level <> 'global' then "g"."moved_project" end, false) then 131072 else 0 end + case when coalesce(case when n.level is not null then "n"."merge_when_pipeline_succeeds" when g.level <> 'global' then "g"."merge_when_pipeline_succeeds" end, false) then 262144 else 0 end)::integer as flags, n.group_email, g.notification_email as global_email,
         exists (
    select 1 from sources ms join members m
        on (ms.source_type = 'group' and m.group_id = ms.source_id) or (ms.source_type = 'project' and m.project_id = ms.source_id)
     where ms.target_type = h.target_type and ms.target_id = h.target_id and m.user_id = h.user_id) as member
    from held h
    left join nearest n on n.user_id = h.user_id and n.target_type = h.target_type and n.target_id = h.target_id
    left join notification_settings g on g.user_id = h.user_id and g.group_id is null and g.project_id is null) r;
    else

    delete from notification_subscriptions s
     where s.user_id in (select unnest(p_users)) and (s.group_id = any(t_groups) or s.project_id = any(t_projects));
    insert into notification_subscriptions (user_id, group_id, project_id, level, source_type, source_id, flags, group_email, global_email, member)
    select r.user_id, case when r.target_type = 'group' then r.target_id end,
           case when r.target_type = 'project' then r.target_id end,
           r.level, r.source_type, r.source_id, r.flags, r.group_email, r.global_email, r.member
      from (
  with recursive
    sources (target_type, target_id, source_type, source_id, full_path, parent_id, depth) as (
      select 'project'::text, walk_p.id, 'project'::text, walk_p.id, walk_p.path_with_namespace, walk_p.group_id, 0
        from projects walk_p where walk_p.id in (select unnest(t_projects))
      union all
      select 'group'::text, walk_g.id, 'group'::text, walk_g.id, walk_g.full_path, walk_g.parent_id, 0
        from groups walk_g where walk_g.id in (select unnest(t_groups))
      union all
      select walk_s.target_type, walk_s.target_id, 'group'::text, walk_up.id, walk_up.full_path, walk_up.parent_id,
             walk_s.depth + 1
        from sources walk_s join groups walk_up on walk_up.id = walk_s.parent_id
       where walk_s.depth < 100
    ),


  global_holders as (
    select user_id, level from notification_settings
     where group_id is null and project_id is null and level = any(array['watch', 'custom']::text[]) and user_id in (select unnest(p_users))
  ),
  rows_there as (
    select s.target_type, s.target_id, ns.user_id, s.source_type, s.source_id, s.full_path, s.depth, ns.level
      from sources s join notification_settings ns on ns.group_id = s.source_id
     where s.source_type = 'group' and ns.level = any(array['watch', 'custom', 'global']::text[]) and ns.user_id in (select unnest(p_users))
    union all
    select s.target_type, s.target_id, ns.user_id, s.source_type, s.source_id, s.full_path, s.depth, ns.level
      from sources s join notification_settings ns on ns.project_id = s.source_id
     where s.source_type = 'project' and ns.level = any(array['watch', 'custom', 'global']::text[]) and ns.user_id in (select unnest(p_users))
  ),
  holders as (
    select r.target_type, r.target_id, r.user_id, r.source_type, r.source_id, r.full_path, r.depth,
           r.level as level_there, gh.level as global_level
      from rows_there r left join global_holders gh on gh.user_id = r.user_id
     where (r.level = any(array['watch', 'custom']::text[])
    or (coalesce(r.level, 'global') = 'global' and gh.level = any(array['watch', 'custom']::text[])))
    union all
    -- From each global holder to their memberships at the sources (LATERAL: an index probe per
    -- holder, never a scan of the tree's members), where they have no row.
    select s.target_type, s.target_id, gh.user_id, s.source_type, s.source_id, s.full_path, s.depth, null, gh.level
      from global_holders gh
      cross join lateral (
        select 'group'::text as source_type, m.group_id as source_id from members m
         where m.user_id = gh.user_id and m.group_id in (select source_id from sources where source_type = 'group')
           and not exists (select 1 from notification_settings x where x.user_id = m.user_id and x.group_id = m.group_id)
        union all
        select 'project', m.project_id from members m
         where m.user_id = gh.user_id and m.project_id in (select source_id from sources where source_type = 'project')
           and not exists (select 1 from notification_settings x where x.user_id = m.user_id and x.project_id = m.project_id)
      ) ms
      join sources s on s.source_type = ms.source_type and s.source_id = ms.source_id
     where (null::text = any(array['watch', 'custom']::text[])
    or (coalesce(null::text, 'global') = 'global' and gh.level = any(array['watch', 'custom']::text[])))
  ),

  at_sources as (
    select s.target_type, s.target_id, s.source_type, s.source_id, s.full_path, s.depth,
    ns.user_id, ns.level, ns.notification_email, "ns"."new_release" as "new_release", "ns"."new_note" as "new_note", "ns"."new_issue" as "new_issue", "ns"."reopen_issue" as "reopen_issue", "ns"."close_issue" as "close_issue", "ns"."reassign_issue" as "reassign_issue", "ns"."issue_due" as "issue_due", "ns"."new_merge_request" as "new_merge_request", "ns"."push_to_merge_request" as "push_to_merge_request", "ns"."reopen_merge_request" as "reopen_merge_request", "ns"."close_merge_request" as "close_merge_request", "ns"."reassign_merge_request" as "reassign_merge_request", "ns"."change_reviewer_merge_request" as "change_reviewer_merge_request", "ns"."merge_merge_request" as "merge_merge_request", "ns"."failed_pipeline" as "failed_pipeline", "ns"."fixed_pipeline" as "fixed_pipeline", "ns"."success_pipeline" as "success_pipeline", "ns"."moved_project" as "moved_project", "ns"."merge_when_pipeline_succeeds" as "merge_when_pipeline_succeeds" from sources s join notification_settings ns on ns.group_id = s.source_id
     where s.source_type = 'group' and ns.user_id in (select user_id from holders)
    union all
    select s.target_type, s.target_id, s.source_type, s.source_id, s.full_path, s.depth,
    ns.user_id, ns.level, ns.notification_email, "ns"."new_release" as "new_release", "ns"."new_note" as "new_note", "ns"."new_issue" as "new_issue", "ns"."reopen_issue" as "reopen_issue", "ns"."close_issue" as "close_issue", "ns"."reassign_issue" as "reassign_issue", "ns"."issue_due" as "issue_due", "ns"."new_merge_request" as "new_merge_request", "ns"."push_to_merge_request" as "push_to_merge_request", "ns"."reopen_merge_request" as "reopen_merge_request", "ns"."close_merge_request" as "close_merge_request", "ns"."reassign_merge_request" as "reassign_merge_request", "ns"."change_reviewer_merge_request" as "change_reviewer_merge_request", "ns"."merge_merge_request" as "merge_merge_request", "ns"."failed_pipeline" as "failed_pipeline", "ns"."fixed_pipeline" as "fixed_pipeline", "ns"."success_pipeline" as "success_pipeline", "ns"."moved_project" as "moved_project", "ns"."merge_when_pipeline_succeeds" as "merge_when_pipeline_succeeds" from sources s join notification_settings ns on ns.project_id = s.source_id
     where s.source_type = 'project' and ns.user_id in (select user_id from holders)),
  nearest as (
    select a.target_type, a.target_id, a.user_id, (array['disabled', 'participating', 'watch', 'global', 'mention', 'custom']::text[])[((a.k >> 36) & 15) + 1] as level,
           s.source_type, s.source_id, s.full_path, substr(a.e, 4) as group_email, ((a.k >> 0) & 1) = 1 as "new_release", ((a.k >> 1) & 1) = 1 as "new_note", ((a.k >> 2) & 1) = 1 as "new_issue", ((a.k >> 3) & 1) = 1 as "reopen_issue", ((a.k >> 4) & 1) = 1 as "close_issue", ((a.k >> 5) & 1) = 1 as "reassign_issue", ((a.k >> 6) & 1) = 1 as "issue_due", ((a.k >> 7) & 1) = 1 as "new_merge_request", ((a.k >> 8) & 1) = 1 as "push_to_merge_request", ((a.k >> 9) & 1) = 1 as "reopen_merge_request", ((a.k >> 10) & 1) = 1 as "close_merge_request", ((a.k >> 11) & 1) = 1 as "reassign_merge_request", ((a.k >> 12) & 1) = 1 as "change_reviewer_merge_request", ((a.k >> 13) & 1) = 1 as "merge_merge_request", ((a.k >> 14) & 1) = 1 as "failed_pipeline", ((a.k >> 15) & 1) = 1 as "fixed_pipeline", ((a.k >> 16) & 1) = 1 as "success_pipeline", ((a.k >> 17) & 1) = 1 as "moved_project", ((a.k >> 18) & 1) = 1 as "merge_when_pipeline_succeeds"
      from (
        select target_type, target_id, user_id, min((depth::bigint << 40) + ((array_position(array['disabled', 'participating', 'watch', 'global', 'mention', 'custom']::text[], level)::bigint - 1) << 36) + case when "new_release" then 1::bigint else 0 end + case when "new_note" then 2::bigint else 0 end + case when "new_issue" then 4::bigint else 0 end + case when "reopen_issue" then 8::bigint else 0 end + case when "close_issue" then 16::bigint else 0 end + case when "reassign_issue" then 32::bigint else 0 end + case when "issue_due" then 64::bigint else 0 end + case when "new_merge_request" then 128::bigint else 0 end + case when "push_to_merge_request" then 256::bigint else 0 end + case when "reopen_merge_request" then 512::bigint else 0 end + case when "close_merge_request" then 1024::bigint else 0 end + case when "reassign_merge_request" then 2048::bigint else 0 end + case when "change_reviewer_merge_request" then 4096::bigint else 0 end + case when "merge_merge_request" then 8192::bigint else 0 end + case when "failed_pipeline" then 16384::bigint else 0 end + case when "fixed_pipeline" then 32768::bigint else 0 end + case when "success_pipeline" then 65536::bigint else 0 end + case when "moved_project" then 131072::bigint else 0 end + case when "merge_when_pipeline_succeeds" then 262144::bigint else 0 end) filter (where level <> 'global') as k,
               min(lpad(depth::text, 3, '0') || notification_email)
                 filter (where source_type = 'group' and notification_email is not null) as e
          from at_sources group by target_type, target_id, user_id
      ) a
      left join sources s on s.target_type = a.target_type and s.target_id = a.target_id and s.depth = (a.k >> 40)
  ),
  held as (select distinct target_type, target_id, user_id from holders)
  select h.target_type, h.target_id, h.user_id,
  coalesce(n.level, nullif(g.level, 'global'), 'participating') as level,
  case when n.level is null then 'global' else n.source_type end as source_type,
  n.source_id,
         (case when coalesce(case when n.level is not null then "n"."new_release" when g.level <> 'global' then "g"."new_release" end, false) then 1 else 0 end + case when coalesce(case when n.level is not null then "n"."new_note" when g.level <> 'global' then "g"."new_note" end, false) then 2 else 0 end + case when coalesce(case when n.level is not null then "n"."new_issue" when g.level <> 'global' then "g"."new_issue" end, false) then 4 else 0 end + case when coalesce(case when n.level is not null then "n"."reopen_issue" when g.level <> 'global' then "g"."reopen_issue" end, false) then 8 else 0 end + case when coalesce(case when n.level is not null then "n"."close_issue" when g.level <> 'global' then "g"."close_issue" end, false) then 16 else 0 end + case when coalesce(case when n.level is not null then "n"."reassign_issue" when g.level <> 'global' then "g"."reassign_issue" end, false) then 32 else 0 end + case when coalesce(case when n.level is not null then "n"."issue_due" when g.level <> 'global' then "g"."issue_due" end, false) then 64 else 0 end + case when coalesce(case when n.level is not null then "n"."new_merge_request" when g.level <> 'global' then "g"."new_merge_request" end, false) then 128 else 0 end + case when coalesce(case when n.level is not null then "n"."push_to_merge_request" when g.level <> 'global' then "g"."push_to_merge_request" end, false) then 256 else 0 end + case when coalesce(case when n.level is not null then "n"."reopen_merge_request" when g.level <> 'global' then "g"."reopen_merge_request" end, false) then 512 else 0 end + case when coalesce(case when n.level is not null then "n"."close_merge_request" when g.level <> 'global' then "g"."close_merge_request" end, false) then 1024 else 0 end + case when coalesce(case when n.level is not null then "n"."reassign_merge_request" when g.level <> 'global' then "g"."reassign_merge_request" end, false) then 2048 else 0 end + case when coalesce(case when n.level is not null then "n"."change_reviewer_merge_request" when g.level <> 'global' then "g"."change_reviewer_merge_request" end, false) then 4096 else 0 end + case when coalesce(case when n.level is not null then "n"."merge_merge_request" when g.level <> 'global' then "g"."merge_merge_request" end, false) then 8192 else 0 end + case when coalesce(case when n.level is not null then "n"."failed_pipeline" when g.level <> 'global' then "g"."failed_pipeline" end, false) then 16384 else 0 end + case when coalesce(case when n.level is not null then "n"."fixed_pipeline" when g.level <> 'global' then "g"."fixed_pipeline" end, false) then 32768 else 0 end + case when coalesce(case when n.level is not null then "n"."success_pipeline" when g.level <> 'global' then "g"."success_pipeline" end, false) then 65536 else 0 end + case when coalesce(case when n.level is not null then "n"."moved_project" when g.level <> 'global' then "g"."moved_project" end, false) then 131072 else 0 end + case when coalesce(case when n.level is not null then "n"."merge_when_pipeline_succeeds" when g.level <> 'global' then "g"."merge_when_pipeline_succeeds" end, false) then 262144 else 0 end)::integer as flags, n.group_email, g.notification_email as global_email,
         exists (
    select 1 from sources ms join members m
        on (ms.source_type = 'group' and m.group_id = ms.source_id) or (ms.source_type = 'project' and m.project_id = ms.source_id)
     where ms.target_type = h.target_type and ms.target_id = h.target_id and m.user_id = h.user_id) as member
    from held h
    left join nearest n on n.user_id = h.user_id and n.target_type = h.target_type and n.target_id = h.target_id
    left join notification_settings g on g.user_id = h.user_id and g.group_id is null and g.project_id is null) r;
    end if;
  end`;

const COLUMNS = `target_type text, target_id bigint, user_id bigint, level text, source_type text, source_id bigint,
  flags integer, group_email text, global_email text, member boolean`;

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table notification_subscriptions (
      user_id bigint not null references users (id) on delete cascade,
      group_id bigint references groups (id) on delete cascade,
      project_id bigint references projects (id) on delete cascade,
      level text not null,
      source_type text not null,
      source_id bigint,
      flags integer not null,
      group_email text,
      global_email text,
      member boolean not null,
      check ((group_id is null) <> (project_id is null))
    );
    create unique index notification_subscriptions_project on notification_subscriptions (project_id, user_id)
      include (level, source_type, source_id, flags, group_email, global_email, member) where project_id is not null;
    create unique index notification_subscriptions_group on notification_subscriptions (group_id, user_id)
      include (level, source_type, source_id, flags, group_email, global_email, member) where group_id is not null;
    create index notification_subscriptions_user on notification_subscriptions (user_id);
    create type notification_settings_touch as (user_id bigint, group_id bigint, project_id bigint);
  `.execute(db);
  await sql
    .raw(`create function notification_subscription_rows(p_groups bigint[], p_projects bigint[])
      returns table (${COLUMNS}) language sql stable as $rows$${ROWS}$rows$`)
    .execute(db);
  await sql
    .raw(`create function notification_subscriptions_refresh(p_users bigint[], p_groups bigint[], p_projects bigint[])
      returns void language plpgsql set plan_cache_mode = force_generic_plan as $refresh$${REFRESH}$refresh$`)
    .execute(db);
  await sql`
    -- Every list from scratch: after a migration that changes the rule.
    create function notification_subscriptions_rebuild() returns void language plpgsql as $$
    begin
      perform notification_subscriptions_refresh(
        null, array(select id from groups where parent_id is null), '{}');
    end $$;

    -- The users of changed settings rows or memberships, and where: below their groups and
    -- projects; for a global settings row, below every group and project the user has a row or
    -- a membership at.
    create function notification_subscriptions_touched(p_rows notification_settings_touch[])
    returns void language plpgsql as $$
    declare
      v_users bigint[];
      v_groups bigint[];
      v_projects bigint[];
      v_everywhere bigint[];
    begin
      select array_agg(distinct r.user_id),
             coalesce(array_agg(distinct r.group_id) filter (where r.group_id is not null), '{}'),
             coalesce(array_agg(distinct r.project_id) filter (where r.project_id is not null), '{}'),
             coalesce(array_agg(distinct r.user_id) filter (where r.group_id is null and r.project_id is null), '{}')
        into v_users, v_groups, v_projects, v_everywhere
        from unnest(p_rows) r;
      if v_users is null then
        return;
      end if;
      if cardinality(v_everywhere) > 0 then
        v_groups := v_groups || array(
          select group_id from members where user_id = any(v_everywhere) and group_id is not null
          union select group_id from notification_settings where user_id = any(v_everywhere) and group_id is not null);
        v_projects := v_projects || array(
          select project_id from members where user_id = any(v_everywhere) and project_id is not null
          union select project_id from notification_settings where user_id = any(v_everywhere) and project_id is not null);
      end if;
      perform notification_subscriptions_refresh(v_users, v_groups, v_projects);
    end $$;
  `.execute(db);
  await sql`
    create function notification_subscriptions_rows_changed() returns trigger language plpgsql as $$
    begin
      if TG_OP = 'INSERT' then
        perform notification_subscriptions_touched(array(
          select row(user_id, group_id, project_id)::notification_settings_touch from new_rows));
      elsif TG_OP = 'UPDATE' then
        -- Only the rows that changed in more than their updated_at: an upsert that writes what was
        -- there (a settings form saved again, a re-applied configuration) recomputes nothing.
        perform notification_subscriptions_touched(array(
          select row(x.user_id, x.group_id, x.project_id)::notification_settings_touch
            from old_rows o join new_rows n on n.id = o.id,
                 lateral (values (o.user_id, o.group_id, o.project_id), (n.user_id, n.group_id, n.project_id))
                   x (user_id, group_id, project_id)
           where to_jsonb(o) - 'updated_at' is distinct from to_jsonb(n) - 'updated_at'));
      else
        perform notification_subscriptions_touched(array(
          select row(user_id, group_id, project_id)::notification_settings_touch from old_rows));
      end if;
      return null;
    end $$;

    create function notification_subscriptions_tree_changed() returns trigger language plpgsql as $$
    declare
      v_ids bigint[];
    begin
      -- New groups or projects, or those whose parent changed (not a rename or a visibility change:
      -- the list holds neither).
      if TG_OP = 'INSERT' then
        v_ids := array(select id from new_rows);
      elsif TG_TABLE_NAME = 'groups' then
        v_ids := array(select n.id from new_rows n join old_rows o on o.id = n.id where n.parent_id is distinct from o.parent_id);
      else
        v_ids := array(select n.id from new_rows n join old_rows o on o.id = n.id where n.group_id is distinct from o.group_id);
      end if;
      if cardinality(v_ids) = 0 then
        return null;
      end if;
      if TG_TABLE_NAME = 'groups' then
        perform notification_subscriptions_refresh(null, v_ids, '{}');
      else
        perform notification_subscriptions_refresh(null, '{}', v_ids);
      end if;
      return null;
    end $$;
  `.execute(db);
  for (const table of ['notification_settings', 'members']) {
    await sql
      .raw(`
        create trigger ${table}_subscriptions_insert after insert on ${table}
          referencing new table as new_rows for each statement
          execute function notification_subscriptions_rows_changed();
        create trigger ${table}_subscriptions_update after update on ${table}
          referencing old table as old_rows new table as new_rows for each statement
          execute function notification_subscriptions_rows_changed();
        create trigger ${table}_subscriptions_delete after delete on ${table}
          referencing old table as old_rows for each statement
          execute function notification_subscriptions_rows_changed();`)
      .execute(db);
  }
  for (const table of ['groups', 'projects']) {
    await sql
      .raw(`
        create trigger ${table}_subscriptions_insert after insert on ${table}
          referencing new table as new_rows for each statement
          execute function notification_subscriptions_tree_changed();
        create trigger ${table}_subscriptions_update after update on ${table}
          referencing old table as old_rows new table as new_rows for each statement
          execute function notification_subscriptions_tree_changed();`)
      .execute(db);
  }
  await sql`select notification_subscriptions_rebuild()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    drop trigger notification_settings_subscriptions_insert on notification_settings;
    drop trigger notification_settings_subscriptions_update on notification_settings;
    drop trigger notification_settings_subscriptions_delete on notification_settings;
    drop trigger members_subscriptions_insert on members;
    drop trigger members_subscriptions_update on members;
    drop trigger members_subscriptions_delete on members;
    drop trigger groups_subscriptions_insert on groups;
    drop trigger groups_subscriptions_update on groups;
    drop trigger projects_subscriptions_insert on projects;
    drop trigger projects_subscriptions_update on projects;
    drop function notification_subscriptions_tree_changed();
    drop function notification_subscriptions_rows_changed();
    drop function notification_subscriptions_touched(notification_settings_touch[]);
    drop type notification_settings_touch;
    drop function notification_subscriptions_rebuild();
    drop function notification_subscriptions_refresh(bigint[], bigint[], bigint[]);
    drop function notification_subscription_rows(bigint[], bigint[]);
    drop table notification_subscriptions;
  `.execute(db);
}
