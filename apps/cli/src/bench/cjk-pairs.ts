/**
 * The Chinese / Japanese paraphrase set of `dsh-memory bench cjk`: hand-written pairs of a
 * stored memory and a later user message that needs it, where the two share meaning more than
 * characters. Written for this benchmark (not taken from any corpus); every pair was checked
 * by hand to have exactly one right memory in the set.
 *
 * Kinds:
 * - `compound`: a single character or short word against the compound that holds it (茶 / 乌龙茶);
 * - `synonym`: near synonyms and different wording (爱喝 / 喜欢喝, 考试 / 考);
 * - `script`: simplified against traditional Chinese (软件 / 軟體), the same word in the other script;
 * - `kana-kanji`: the same Japanese word in kana and in kanji (りんご / 林檎);
 * - `inflection`: Japanese verb and adjective forms (飲みます / 飲んだ / 飲まない);
 * - `mixed`: Chinese or Japanese mixed with ASCII names, numbers and code words.
 */

/** One query → memory pair. */
export interface ParaphrasePair {
  readonly kind: 'compound' | 'synonym' | 'script' | 'kana-kanji' | 'inflection' | 'mixed'
  /** The user's later message. */
  readonly query: string
  /** The memory it needs (stored among the distractors). */
  readonly memory: string
}

const pair = (kind: ParaphrasePair['kind'], query: string, memory: string): ParaphrasePair => ({ kind, query, memory })

/** The set (106 pairs). */
export const PARAPHRASE_PAIRS: readonly ParaphrasePair[] = [
  // compound: a part against the whole word
  pair('compound', '我平时喝什么茶？', '用户最喜欢的饮料是乌龙茶，每天下午泡一壶。'),
  pair('compound', '推荐一家吃面的地方', '公司楼下那家兰州拉面馆用户去过很多次，觉得汤头最好。'),
  pair('compound', '我养的狗叫什么名字', '用户家的柯基犬名叫豆豆，今年三岁。'),
  pair('compound', '我上次去的海边是哪里', '去年夏天用户和家人去了三亚海滩度假。'),
  pair('compound', '我对什么过敏', '用户对花生过敏，点外卖要提醒商家。'),
  pair('compound', '我用的是什么车', '用户开一辆白色的电动汽车，平时停在小区地下车库。'),
  pair('compound', '我喜欢什么花', '用户最喜欢向日葵，阳台上种了好几盆。'),
  pair('compound', '我周末常去的山', '用户周末经常去爬香山，一般早上七点出发。'),
  pair('compound', '我爱吃的鱼', '用户最爱吃清蒸鲈鱼，不太吃辣。'),
  pair('compound', '我女儿学什么琴', '用户的女儿在学小提琴，每周六上课。'),
  pair('compound', '我常用的笔', '用户写笔记习惯用黑色钢笔，不喜欢圆珠笔。'),
  pair('compound', '我住的楼有几层', '用户住在一栋十八层的公寓楼里，家在十二楼。'),
  pair('compound', '私の好きな酒は？', 'ユーザーは日本酒が好きで、特に辛口を好む。'),
  pair('compound', '私の猫の名前', 'ユーザーは三毛猫を飼っていて、名前はミケ。'),
  pair('compound', '好きな麺は何だっけ', 'ユーザーは豚骨ラーメンが大好きで、週に一度は食べに行く。'),
  pair('compound', '私がよく行く店', 'ユーザーは駅前の喫茶店で毎朝コーヒーを飲む。'),
  pair('compound', 'どの島に行ったっけ', 'ユーザーは去年の夏、沖縄の宮古島に旅行した。'),
  pair('compound', '子供の習い事の水泳', 'ユーザーの息子は毎週水曜日にスイミングスクールで水泳を習っている。'),
  pair('compound', '我的手机是什么牌子', '用户用的智能手机是华为的，屏幕去年换过。'),
  pair('compound', '我喝的咖啡', '用户早上只喝美式咖啡，不加糖也不加奶。'),
  // synonym: the same meaning in other words
  pair('synonym', '我喜欢喝什么', '用户爱喝冰美式，夏天一天两杯。'),
  pair('synonym', '我什么时候考试', '用户下个月十五号要考驾照科目二。'),
  pair('synonym', '我的生日是哪天', '用户出生于三月八日，每年都和朋友一起过。'),
  pair('synonym', '我在哪里上班', '用户在杭州一家互联网公司工作，负责后端开发。'),
  pair('synonym', '我的爱人叫什么', '用户的妻子名叫李静，是一名中学老师。'),
  pair('synonym', '我讨厌吃什么', '用户不喜欢香菜，点菜时总是要求不放。'),
  pair('synonym', '我的孩子多大了', '用户的儿子今年七岁，刚上小学一年级。'),
  pair('synonym', '我晚上几点睡觉', '用户习惯十一点前上床休息，早上六点半起床。'),
  pair('synonym', '我平常怎么去公司', '用户每天坐地铁二号线通勤，大约四十分钟。'),
  pair('synonym', '我的爱好是什么', '用户业余时间喜欢拍照，尤其是街头摄影。'),
  pair('synonym', '我最近在看什么书', '用户这阵子在读《三体》第二部，睡前读几十页。'),
  pair('synonym', '我的老家在哪', '用户是四川成都人，过年会回家乡。'),
  pair('synonym', '我会说哪些外语', '用户除了中文还能讲英语和一点日语。'),
  pair('synonym', '我身体有什么毛病', '用户有轻微的腰椎间盘突出，久坐会腰疼。'),
  pair('synonym', '我打算什么时候搬家', '用户计划在年底前搬到新房子，目前在装修。'),
  pair('synonym', '私はいつ試験がある？', 'ユーザーは来月の十日にTOEICを受ける予定だ。'),
  pair('synonym', '私の仕事は何だっけ', 'ユーザーは大阪の会社でエンジニアとして働いている。'),
  pair('synonym', '私の妻の名前', 'ユーザーの奥さんはゆかりさんという。'),
  pair('synonym', '苦手な食べ物は？', 'ユーザーは納豆が嫌いで、朝食には出さない。'),
  pair('synonym', '私の趣味', 'ユーザーは休日に釣りをするのが好きだ。'),
  pair('synonym', '実家はどこ？', 'ユーザーの故郷は北海道の札幌だ。'),
  pair('synonym', '毎朝何時に起きる？', 'ユーザーはいつも朝六時に目を覚ます。'),
  pair('synonym', '通勤手段は？', 'ユーザーは会社まで自転車で通っている。'),
  pair('synonym', '我的宠物吃什么', '用户给家里的猫只喂无谷猫粮。'),
  pair('synonym', '我想学哪种乐器', '用户一直想学吉他，打算报个周末班。'),
  // script: simplified against traditional
  pair('script', '我用什麼軟體寫程式', '用户写代码用的编辑器是 VS Code，配合 Vim 插件。'),
  pair('script', '我的電腦是哪一台', '用户的电脑是一台二〇二三年的笔记本，十六寸屏幕。'),
  pair('script', '我喜歡的電影', '用户最喜欢的电影是《千与千寻》，看过五遍。'),
  pair('script', '我們的資料庫用什麼', '项目的数据库用的是 PostgreSQL，版本十六。'),
  pair('script', '我養的魚', '用户养了一缸热带鱼，主要是孔雀鱼。'),
  pair('script', '我學過的語言', '用户学过法语两年，现在还能简单对话。'),
  pair('script', '我的體重目標', '用户的减肥目标是体重降到七十公斤以下。'),
  pair('script', '我喜歡的運動', '用户最喜欢的运动是羽毛球，每周打两次。'),
  pair('script', '我們開會的時間', '团队例会定在每周一上午十点。'),
  pair('script', '我的銀行帳戶', '用户的工资卡开在招商银行。'),
  pair('script', '我买的鋼琴', '用户去年买了一架雅马哈立式钢琴。'),
  pair('script', '用户的电邮地址偏好', '用戶希望所有通知都發到工作郵箱，不要發到私人郵箱。'),
  pair('script', '我最近的旅游计划', '用戶打算明年春天去京都旅遊賞櫻。'),
  pair('script', '我对报告格式的要求', '用戶要求所有週報都用表格列出進度和風險。'),
  pair('script', '我的医生是谁', '用戶的家庭醫生是王醫師，在社區診所看診。'),
  // kana-kanji: the same word in kana and kanji
  pair('kana-kanji', 'りんごは好き？', 'ユーザーは林檎が大好物で、毎朝一個食べる。'),
  pair('kana-kanji', 'すしの好み', 'ユーザーは寿司ではサーモンが一番好きだ。'),
  pair('kana-kanji', 'ねこを飼ってる？', 'ユーザーは猫を二匹飼っている。'),
  pair('kana-kanji', 'めがねの度数', 'ユーザーの眼鏡は去年作り直したばかりだ。'),
  pair('kana-kanji', 'さくらを見に行く予定', 'ユーザーは四月に上野公園へ桜を見に行く予定だ。'),
  pair('kana-kanji', '珈琲は何杯飲む？', 'ユーザーはコーヒーを一日三杯まで飲む。'),
  pair('kana-kanji', 'たばこは吸う？', 'ユーザーは煙草を五年前にやめた。'),
  pair('kana-kanji', 'うどんとそば、どっちが好き', 'ユーザーは饂飩より蕎麦が好きで、特にざる蕎麦を好む。'),
  pair('kana-kanji', 'いぬの散歩の時間', 'ユーザーは毎晩七時に犬の散歩に行く。'),
  pair('kana-kanji', 'かばんの色', 'ユーザーの通勤用の鞄は黒い革製だ。'),
  pair('kana-kanji', 'たまごアレルギー', 'ユーザーの娘は卵にアレルギーがある。'),
  pair('kana-kanji', 'くすりを飲む時間', 'ユーザーは毎食後に薬を飲む必要がある。'),
  pair('kana-kanji', 'ぶどうの品種', 'ユーザーは葡萄ならシャインマスカットが好きだ。'),
  pair('kana-kanji', 'とけいのブランド', 'ユーザーはセイコーの腕時計を愛用している。'),
  pair('kana-kanji', 'ほんを読む時間', 'ユーザーは寝る前に三十分本を読む。'),
  // inflection: Japanese verb and adjective forms
  pair('inflection', 'お酒は飲みますか', 'ユーザーは平日はお酒を飲まない。'),
  pair('inflection', '昨日何を食べた？', 'ユーザーは昨日の夜、焼肉を食べた。'),
  pair('inflection', 'どこに住んでいる？', 'ユーザーは横浜に住んでいます。'),
  pair('inflection', '何の映画を見たい？', 'ユーザーは新しいアニメ映画を見たがっていた。'),
  pair('inflection', '週末はどこへ行きます？', 'ユーザーは週末に鎌倉へ行った。'),
  pair('inflection', '辛いものは食べられる？', 'ユーザーは辛い料理が食べられない。'),
  pair('inflection', '朝は早く起きますか', 'ユーザーは毎朝五時に起きている。'),
  pair('inflection', 'どんな音楽を聴く？', 'ユーザーは通勤中にジャズを聴いています。'),
  pair('inflection', '英語を話せる？', 'ユーザーは英語を少し話します。'),
  pair('inflection', '運転しますか', 'ユーザーは車を運転しない。免許を持っていない。'),
  pair('inflection', '何を勉強している？', 'ユーザーは夜に統計学を勉強した。'),
  pair('inflection', '寒いのは平気？', 'ユーザーは寒さに弱く、冬は寒かったと言っていた。'),
  pair('inflection', '誰と働いている？', 'ユーザーは佐藤さんと一緒に働きました。'),
  pair('inflection', 'ピアノを弾ける？', 'ユーザーは子供の頃ピアノを弾いていた。'),
  pair('inflection', '何を買いたい？', 'ユーザーは新しいカメラを買いたいと言った。'),
  // mixed: CJK with ASCII names, numbers and code words
  pair('mixed', '我们项目用哪个 Node 版本', '项目要求 Node.js 22 以上，CI 里也是 22.16。'),
  pair('mixed', 'React 还是 Vue，我们选了哪个', '前端框架最终选定 Vue 3，组件库用 Element Plus。'),
  pair('mixed', '部署用的是 k8s 吗', '服务部署在 Kubernetes 集群上，用 Helm 管理配置。'),
  pair('mixed', '我的 GitHub 用户名', '用户的GitHub账号是 lin-dev-88。'),
  pair('mixed', 'API 的限流是多少', '接口限流设置为每分钟 600 次请求，超出返回 429。'),
  pair('mixed', '测试覆盖率要求', '团队要求单元测试 coverage 不低于 80%。'),
  pair('mixed', '数据库备份几点跑', 'PostgreSQL 的全量备份每天凌晨 3 点执行。'),
  pair('mixed', 'ログはどこに出す？', 'アプリのlogはCloudWatchに送っている。'),
  pair('mixed', 'デプロイは何曜日？', '本番へのdeployは毎週木曜日の午後に行う。'),
  pair('mixed', 'Python のバージョン', 'このプロジェクトはPython3.12で動かしている。'),
  pair('mixed', 'コードレビューのルール', 'PRは最低二人のapproveが必要だ。'),
  pair('mixed', '我的 Mac 是哪款', '用户用的是 MacBook Pro 14 寸，M3 芯片。'),
  pair('mixed', 'Docker 镜像放在哪', '镜像统一推到公司内部的 Harbor 仓库。'),
  pair('mixed', '周报用什么工具写', '用户每周五用 Notion 写周报，发给组长。'),
  pair('mixed', 'VPN の設定', '社内VPNはWireGuardを使い、設定ファイルは総務からもらう。'),
  pair('mixed', '邮件签名怎么写', '用户的 email 签名是「林浩 | Backend Team」。'),
]

/**
 * Messages whose answer is not in the set: a recall that injects anything for them injects
 * something wrong (false matches with no right answer to find).
 */
export const UNANSWERABLE_QUERIES: readonly string[] = [
  '我的护照号码是多少',
  '我喜欢哪个足球队',
  '我奶奶住在哪里',
  '我上次体检是什么时候',
  '我的车牌号',
  '私の血液型は？',
  '好きな作家は誰？',
  '去年の誕生日に何をもらった？',
  '我们的 Redis 密码放在哪',
  'Kafka のトピック名',
  '我最讨厌的颜色',
  '私の兄弟は何人？',
  '我小时候的梦想',
  '好きな季節は？',
  '我们的 SLA 是多少',
]
