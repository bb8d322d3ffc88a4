/**
 * The labelled set of `dsh-memory bench cues`: topics a user talked about (one cue each, formed
 * from the exchange as the cue bank forms a conversation cue) and later messages labelled with
 * the topic they refer back to, or with none. Chinese and Japanese are first-class: idioms the
 * user repeats, paraphrases, mixed Chinese/Japanese + English identifiers, typos, and messages
 * that must wake nothing.
 */

/** One remembered exchange. */
export interface LabelledTopic {
  readonly id: string
  readonly user: string
  readonly assistant: string
}

/** What a query tests. */
export type QueryKind = 'direct' | 'paraphrase' | 'idiom' | 'mixed' | 'typo' | 'negative'

/** A later user message and the topic it should wake (`null`: none). */
export interface LabelledQuery {
  readonly text: string
  readonly expect: string | null
  readonly kind: QueryKind
}

export const CUE_TOPICS: readonly LabelledTopic[] = Object.freeze([
  { id: 'zh-pool', user: '订单服务老是超时，排查发现是数据库连接池太小', assistant: '把连接池上限从 10 调到 50，并打开了慢查询日志，超时消失了。' },
  { id: 'zh-loop', user: '这个报销需求要形成闭环，从提单、审批到打款都要能追踪', assistant: '补上了打款回执和对账状态，报销流程现在形成闭环。' },
  { id: 'zh-lever', user: '这个季度的抓手是降本增效，先从云服务器账单下手', assistant: '列出了闲置的云服务器实例，回收后每月账单能省三成。' },
  { id: 'zh-feishu', user: '飞书机器人推送的告警消息格式全乱了', assistant: '改用飞书卡片消息推送告警，换行和链接都正常了。' },
  { id: 'zh-weekly', user: '周报模板要加上风险和阻塞项两栏', assistant: '周报模板已加上“风险”和“阻塞项”两栏，下周一开始用。' },
  { id: 'ja-reset', user: 'ログイン画面でパスワードリセットのメールが届かない', assistant: 'SMTP の設定を見直して、メール送信キューを再起動しました。' },
  { id: 'ja-osaka', user: '来月の大阪出張の交通費精算はどうすればいい？', assistant: '経費精算システムに新幹線の領収書をアップロードしてください。' },
  { id: 'ja-cat', user: 'うちの猫の年糕が最近ご飯を食べない', assistant: '食欲不振が二日以上続くなら動物病院に相談してください。' },
  { id: 'ja-vitest', user: 'Vitest のスナップショットテストが CI だけで落ちる', assistant: 'タイムゾーンを UTC に固定したら、CI でもスナップショットが一致しました。' },
  { id: 'mx-effect', user: 'useEffect 里的 fetch 请求在组件卸载后还在 setState，控制台一直报警告', assistant: '在 cleanup 里用 AbortController 取消 fetch 请求，警告就没了。' },
  { id: 'en-oom', user: 'Kubernetes pods keep getting OOMKilled in the staging cluster', assistant: 'Raised the memory limits to 2Gi and added a heap profile to the staging pods.' },
  { id: 'en-vacuum', user: 'Postgres autovacuum is not keeping up with the events table', assistant: 'Tuned autovacuum_vacuum_scale_factor for the events table and the bloat stopped growing.' },
  { id: 'en-disk', user: 'The disk usage alert fires every night at 3am', assistant: 'The backup job fills /var at night; it now writes to the data volume, so the disk alert stays quiet.' },
  { id: 'en-tfstate', user: 'Terraform state lock is stuck after a failed apply', assistant: 'Ran terraform force-unlock with the lock id from the error, then re-applied.' },
  { id: 'en-webhook', user: 'Stripe webhook signatures fail verification in production', assistant: 'The raw request body was parsed as JSON before verification; verify against the raw body.' },
  { id: 'en-flaky', user: 'The checkout e2e test is flaky on Safari', assistant: 'Waiting for the payment iframe to load fixed the flaky checkout test on Safari.' },
])

/** The later messages by what they test: `[message, the topic it should wake or null]`. */
const QUERIES: Readonly<Record<QueryKind, readonly (readonly [text: string, expect: string | null])[]>> = {
  // the topic named again in its own words
  direct: [
    ['订单服务的数据库连接池又满了', 'zh-pool'],
    ['飞书告警消息又乱码了吗', 'zh-feishu'],
    ['パスワードリセットのメールがまた届かない', 'ja-reset'],
    ['Vitest のスナップショットがまた CI で落ちた', 'ja-vitest'],
    ['staging pods are OOMKilled again', 'en-oom'],
    ['the events table autovacuum is behind again', 'en-vacuum'],
    ['Terraform state lock stuck again, what was the fix?', 'en-tfstate'],
    ['Stripe webhook verification failing again', 'en-webhook'],
  ],
  // the same topic, mostly other words
  paraphrase: [
    ['接口一直超时，是不是连接池的问题', 'zh-pool'],
    ['周报里的风险一栏怎么填', 'zh-weekly'],
    ['出張の経費精算の手順をもう一度教えて', 'ja-osaka'],
    ['年糕がまたご飯を残している', 'ja-cat'],
    ['the 3am disk alert woke me up again', 'en-disk'],
    ['checkout test failing randomly in Safari', 'en-flaky'],
  ],
  // the user's own expression carries the topic
  idiom: [
    ['报销这块还是没形成闭环', 'zh-loop'],
    ['降本增效的抓手还有哪些', 'zh-lever'],
    ['云服务器账单这个抓手做完了吗', 'zh-lever'],
    ['打款回执能闭环了吗', 'zh-loop'],
  ],
  // CJK prose around identifiers
  mixed: [
    ['那个 AbortController 的写法再给我看一下', 'mx-effect'],
    ['组件卸载以后 setState 的警告又出现了', 'mx-effect'],
    ['CI の timezone を UTC にした件、どこで設定した？', 'ja-vitest'],
    ['Terraform の force-unlock ってどうやるんだっけ', 'en-tfstate'],
    ['staging 集群的 pods 又被 OOMKilled 了', 'en-oom'],
    ['SMTP 送信キューがまた詰まった', 'ja-reset'],
  ],
  // misspelt names
  typo: [
    ['kubernets pods oomkiled in stagng', 'en-oom'],
    ['postgress autovacum still behind on events', 'en-vacuum'],
    ['terrafrom state lokc stuck', 'en-tfstate'],
    ['stripe webhok signatures failing', 'en-webhook'],
    ['useEfect cleanup with AbortControler', 'mx-effect'],
    ['vitset snapshot failing on CI', 'ja-vitest'],
  ],
  // nothing remembered is meant
  negative: [
    ['今天天气怎么样', null],
    ['帮我写一首关于春天的诗', null],
    ['明日の会議は何時からですか', null],
    ['おすすめのラーメン屋を教えて', null],
    ['what is a good name for a dog', null],
    ['explain the difference between TCP and UDP', null],
    ['translate hello world into French', null],
    ['给我讲个笑话', null],
  ],
}

/** Every labelled query, kind by kind. */
export const CUE_QUERIES: readonly LabelledQuery[] = Object.freeze(
  Object.entries(QUERIES).flatMap(([kind, rows]) => rows.map(([text, expect]) => ({ text, expect, kind: kind as QueryKind }))),
)
