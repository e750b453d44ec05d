#!/usr/bin/env python3
"""Writes tests/fixtures/memory/{corpus,queries}.jsonl: conversational memories of a
home robot in Chinese and English, and queries with their relevant ids.

Hand-written facts (each with queries that paraphrase it or name its key words) sit
among template-made distractors about the same rooms and devices, so term overlap
alone is not enough and neither is topic similarity alone. Deterministic (seed 8).
Run from the repository root: python3 scripts/memory_evalset.py
"""
import json
import random

random.seed(8)

# (text, [queries]) — English facts.
EN = [
    ("operator: I like the bedroom at 22 degrees at night | robot: noted, bedroom 22 °C after 10 pm",
     ["what temperature does the operator want in the bedroom at night", "how warm should the sleeping room be"]),
    ("operator: water the balcony plants every Sunday morning | robot: I will water them on Sundays at 9",
     ["when should the plants on the balcony be watered", "weekly watering schedule for the terrace flowers"]),
    ("operator: the spare house key is in the blue drawer in the hallway | robot: remembered",
     ["where is the spare key", "where did I put the extra key for the front door"]),
    ("operator: my daughter Emma is allergic to cats, keep the cat out of her room | robot: I will keep the door of the kids room closed",
     ["who is allergic to cats", "which child must not be near the cat"]),
    ("operator: don't vacuum before 8 am on weekends, we sleep late | robot: no vacuuming before 8 on Saturday and Sunday",
     ["when can the vacuum run on weekends", "is it ok to clean the floor early on Saturday"]),
    ("operator: the dishwasher tablets are under the kitchen sink | robot: got it",
     ["where are the dishwasher tablets kept", "where do we store detergent for the dish machine"]),
    ("operator: grandma visits every Wednesday afternoon, open the door for her | robot: I will open the front door for grandma on Wednesdays",
     ["when does grandma come", "which day does my grandmother visit"]),
    ("operator: turn the living room lights down to 30 percent when we watch a movie | robot: movie mode: living room lights at 30%",
     ["how bright should the lights be during a film", "movie mode lighting level"]),
    ("operator: the router password is on a sticker behind the TV | robot: noted, behind the TV",
     ["where can I find the wifi password", "internet password location"]),
    ("operator: remind me to take my blood pressure pills at 8 pm | robot: I will remind you at 8 pm every day",
     ["when do I take my medicine", "evening medication reminder time"]),
    ("operator: the cat Mochi eats twice a day, 40 grams each time | robot: Mochi: 40 g at breakfast and dinner",
     ["how much food does the cat get", "feeding amount for Mochi"]),
    ("operator: keep the study quiet between 2 and 4 pm, I have calls | robot: no noisy tasks in the study from 2 to 4",
     ["when does the operator have meetings in the office room", "quiet hours for the study"]),
    ("operator: the garage door sticks, push it twice | robot: noted, push the garage door twice",
     ["the garage door is not opening properly, what should I do", "trick for the stuck garage door"]),
    ("operator: our neighbour Tom has a copy of the key | robot: remembered: Tom next door has a key",
     ["who else has a key to the house", "which neighbour holds our spare key"]),
    ("operator: the washing machine finishes in 90 minutes, tell me when it is done | robot: I will tell you when the laundry is done",
     ["how long does the laundry cycle take", "notify me when the washer ends"]),
    ("operator: never open the front door for strangers when I'm away | robot: understood, the door stays closed for unknown visitors",
     ["can you let a delivery person in when nobody is home", "rule about unknown visitors"]),
    ("operator: the air purifier filter was replaced on March 3 | robot: filter change logged: March 3",
     ["when was the purifier filter last changed", "air cleaner maintenance date"]),
    ("operator: Lily practises piano at 6 pm, don't run the vacuum then | robot: no vacuum at 6 pm during piano practice",
     ["when is piano practice", "why should the robot not clean at six in the evening"]),
    ("operator: the fuse box is in the storage closet next to the bathroom | robot: noted",
     ["where is the electrical panel", "the power went out, where are the breakers"]),
    ("operator: I prefer the curtains open at 7 am on weekdays | robot: curtains open at 7 on weekdays",
     ["what time should the blinds go up on work days", "morning curtain schedule"]),
    ("operator: the robot should charge in the hallway dock, not the kitchen | robot: I will use the hallway dock",
     ["where should the robot recharge", "which charging station to use"]),
    ("operator: the kitchen smoke alarm beeps when the battery is low | robot: I will report the beeping as a low battery",
     ["the fire alarm is chirping, what does it mean", "why is the smoke detector beeping"]),
    ("operator: the plants in the study need watering every three days | robot: study plants every 3 days",
     ["how often do the office plants need water", "watering interval for the indoor plants in the study"]),
    ("operator: my wife Anna likes jasmine tea in the afternoon | robot: noted, jasmine tea for Anna",
     ["what drink does Anna like", "which tea should I make for my wife"]),
    ("operator: set the fridge to 4 degrees | robot: fridge at 4 °C",
     ["what temperature is the refrigerator set to", "how cold is the fridge"]),
    ("operator: the package from the post office is on the dining table | robot: the parcel is on the dining table",
     ["where is the parcel", "where did the delivery go"]),
    ("operator: turn off all lights when everyone leaves the house | robot: away mode switches every light off",
     ["what happens to the lamps when we go out", "leaving home routine for lighting"]),
    ("operator: the bathroom fan should run for 20 minutes after a shower | robot: bathroom fan 20 minutes after showers",
     ["how long should the ventilation run after bathing", "extractor fan timer"]),
    ("operator: Max the dog goes for a walk at 7 am and 7 pm | robot: dog walks at 7 and 19",
     ["when does the dog need to go out", "walking times for Max"]),
    ("operator: the spare light bulbs are on the top shelf of the garage | robot: bulbs: top garage shelf",
     ["where are replacement bulbs", "I need a new lamp bulb, where do we keep them"]),
    ("operator: the heating should be off from May to September | robot: no heating from May to September",
     ["in which months is the heater off", "summer heating rule"]),
    ("operator: the kids must be in bed by 9 pm on school nights | robot: bedtime 9 pm on school nights",
     ["what is the children's bedtime", "when should the kids sleep during the week"]),
    ("operator: the recycling goes out on Tuesday evening | robot: recycling bin out on Tuesdays",
     ["which day is recycling collected", "when do I put out the bins"]),
    ("operator: the baby monitor camera is in the nursery on the dresser | robot: noted",
     ["where is the baby camera", "location of the infant monitor"]),
    ("operator: I am vegetarian, don't suggest meat recipes | robot: vegetarian recipes only",
     ["does the operator eat meat", "dietary preference for meal suggestions"]),
    ("operator: the first aid kit is in the bathroom cabinet | robot: first aid kit: bathroom cabinet",
     ["where are the bandages", "I cut my finger, where is the medical kit"]),
    ("operator: the robot said the hallway was blocked by a box yesterday | robot: the box is still in the hallway",
     ["what was blocking the corridor", "why couldn't the robot pass the entrance"]),
    ("operator: the TV remote batteries were replaced last Friday | robot: noted",
     ["when were the remote control batteries changed", "last battery change for the TV remote"]),
    ("operator: open the bedroom window for 10 minutes every morning to air the room | robot: bedroom window 10 minutes each morning",
     ["how long should the bedroom be aired", "morning ventilation routine"]),
    ("operator: my password manager backup is on the USB stick in the safe | robot: remembered",
     ["where is the backup of my passwords", "location of the usb backup"]),
]

# Chinese facts.
ZH = [
    ("主人：晚上十点以后把客厅的灯调暗 | 机器人：好的，十点后客厅灯调暗",
     ["客厅的灯几点调暗", "晚上客厅灯光怎么设置"]),
    ("主人：我妈妈每周六上午来，记得给她开门 | 机器人：周六上午给妈妈开门",
     ["妈妈什么时候来", "周六谁来家里"]),
    ("主人：厨房的垃圾每天晚上八点倒掉 | 机器人：每天八点倒厨房垃圾",
     ["厨房垃圾什么时候倒", "倒垃圾的时间"]),
    ("主人：备用钥匙放在玄关鞋柜的第二层 | 机器人：记住了，鞋柜第二层",
     ["备用钥匙在哪里", "家里的备用钥匙放哪了"]),
    ("主人：卧室空调夏天设置成二十六度 | 机器人：卧室空调二十六度",
     ["卧室空调开多少度", "夏天空调温度"]),
    ("主人：扫地机每天中午十二点打扫客厅 | 机器人：每天十二点扫客厅",
     ["扫地机几点工作", "客厅什么时候打扫"]),
    ("主人：猫粮放在阳台的柜子里 | 机器人：猫粮在阳台柜子",
     ["猫粮在哪", "喂猫的粮食放在什么地方"]),
    ("主人：我对花粉过敏，春天别开窗 | 机器人：春天不开窗",
     ["谁对花粉过敏", "春天可以开窗吗"]),
    ("主人：书房的台灯坏了，明天有人来修 | 机器人：记下了，明天修书房台灯",
     ["书房台灯怎么了", "什么时候来修灯"]),
    ("主人：孩子们晚上九点睡觉，九点以后别用吸尘器 | 机器人：九点后不吸尘",
     ["孩子几点睡觉", "晚上什么时候不能吸尘"]),
    ("主人：冰箱里的牛奶周五过期 | 机器人：牛奶周五过期",
     ["牛奶什么时候过期", "冰箱里什么东西快坏了"]),
    ("主人：洗衣机洗完衣服要晾在阳台 | 机器人：衣服晾阳台",
     ["衣服洗完晾哪里", "洗好的衣服放在哪晒"]),
    ("主人：热水器每天早上六点半自动加热 | 机器人：六点半加热",
     ["热水器几点开始烧水", "早上洗澡的热水什么时候有"]),
    ("主人：快递放在门口的箱子里就行 | 机器人：快递放门口箱子",
     ["快递放哪里", "包裹到了怎么处理"]),
    ("主人：周三下午有人来打扫卫生 | 机器人：周三下午保洁",
     ["保洁阿姨哪天来", "什么时候有人打扫"]),
    ("主人：我爸爸喜欢喝普洱茶 | 机器人：爸爸喜欢普洱",
     ["爸爸喜欢喝什么", "给爸爸泡什么茶"]),
    ("主人：卫生间的排风扇洗澡后开二十分钟 | 机器人：洗澡后排风二十分钟",
     ["排风扇开多久", "洗完澡要做什么"]),
    ("主人：狗狗旺财每天早晚各遛一次 | 机器人：旺财每天遛两次",
     ["旺财一天遛几次", "什么时候遛狗"]),
    ("主人：窗帘工作日早上七点打开 | 机器人：工作日七点开窗帘",
     ["窗帘几点打开", "早上什么时候拉开窗帘"]),
    ("主人：电表箱在车库的墙上 | 机器人：电表箱在车库",
     ["电闸在哪里", "停电了去哪里看电表"]),
    ("主人：家里的无线网密码贴在路由器底部 | 机器人：密码在路由器底部",
     ["无线网密码在哪", "怎么找到网络密码"]),
    ("主人：明天早上八点提醒我开会 | 机器人：明天八点提醒开会",
     ["明天几点开会", "提醒我什么事"]),
    ("主人：加湿器只在冬天开 | 机器人：冬天开加湿器",
     ["加湿器什么时候用", "夏天要开加湿器吗"]),
    ("主人：鱼缸的鱼每两天喂一次 | 机器人：每两天喂鱼",
     ["多久喂一次鱼", "鱼缸怎么喂"]),
    ("主人：我不吃辣，做菜别放辣椒 | 机器人：不放辣椒",
     ["主人能吃辣吗", "做菜有什么忌口"]),
    ("主人：药箱在卧室衣柜的抽屉里 | 机器人：药箱在衣柜抽屉",
     ["药箱在哪里", "感冒药放在哪"]),
    ("主人：周日晚上把垃圾桶推到楼下 | 机器人：周日晚上推垃圾桶",
     ["垃圾桶哪天推下楼", "周日晚上要做什么"]),
    ("主人：阳台的花每周浇两次水 | 机器人：阳台花每周两次",
     ["阳台的花多久浇一次", "浇花的频率"]),
    ("主人：离家时关掉所有的灯和空调 | 机器人：离家模式关灯关空调",
     ["出门的时候要关什么", "离家模式做什么"]),
    ("主人：小明的生日是十月十五号 | 机器人：记住了，小明十月十五号生日",
     ["小明生日是哪天", "谁的生日在十月"]),
    ("主人：门锁的电池上个月刚换过 | 机器人：门锁电池上月已换",
     ["门锁电池什么时候换的", "智能锁最近换过电池吗"]),
    ("主人：客厅的电视晚上十一点自动关 | 机器人：十一点关电视",
     ["电视几点关", "晚上电视自动关机时间"]),
    ("主人：外婆耳朵不好，说话要大声 | 机器人：跟外婆说话大声一点",
     ["跟外婆说话要注意什么", "谁听力不好"]),
    ("主人：机器人充电座在走廊尽头 | 机器人：充电座在走廊尽头",
     ["充电座在哪", "机器人去哪里充电"]),
    ("主人：烤箱用完要拔掉插头 | 机器人：烤箱用完拔插头",
     ["烤箱用完怎么办", "哪个电器用完要拔插头"]),
    ("主人：周五晚上我们全家出去吃饭 | 机器人：周五晚上不在家",
     ["周五晚上家里有人吗", "哪天晚上全家外出"]),
    ("主人：卧室的窗户晚上要关好 | 机器人：晚上关卧室窗户",
     ["晚上卧室窗户开着还是关着", "睡前要检查什么"]),
    ("主人：儿童房的夜灯整晚开着 | 机器人：儿童房夜灯常开",
     ["夜灯要关吗", "儿童房晚上开什么灯"]),
    ("主人：快递柜的取件码是 4512 | 机器人：取件码 4512",
     ["取件码是多少", "快递柜的密码"]),
    ("主人：热水壶烧开水后自动断电 | 机器人：水壶会自动断电",
     ["水壶会自动关吗", "烧水壶烧开以后怎样"]),
]

# Mixed-language facts (operators switch languages).
MIXED = [
    ("operator: 把 living room 的 air conditioner 调到 24 度 | robot: living room AC at 24",
     ["客厅空调多少度", "living room air conditioning temperature"]),
    ("主人：robot vacuum 不要进 study，里面有很多线 | 机器人：扫地机不进书房",
     ["扫地机能进书房吗", "why should the vacuum avoid the study"]),
    ("operator: the 冰箱 light is broken, order a new bulb | robot: fridge bulb to order",
     ["冰箱的灯坏了吗", "what is wrong with the fridge"]),
    ("主人：Emma 的钢琴课是周四下午四点 | 机器人：Emma 周四四点钢琴课",
     ["Emma 什么时候上钢琴课", "when is Emma's piano lesson"]),
]

ROOMS_EN = ["kitchen", "living room", "bedroom", "bathroom", "study", "balcony", "hallway", "garage"]
ROOMS_ZH = ["厨房", "客厅", "卧室", "卫生间", "书房", "阳台", "走廊", "车库"]
DEV_EN = ["light", "lamp", "fan", "curtain", "speaker", "heater", "TV", "window"]
DEV_ZH = ["灯", "台灯", "风扇", "窗帘", "音箱", "暖气", "电视", "窗户"]
ACT_EN = [("turn on", "is on"), ("turn off", "is off"), ("check", "looks fine"), ("dim", "is dimmed")]
ACT_ZH = [("打开", "已打开"), ("关掉", "已关闭"), ("看看", "一切正常"), ("调暗", "已调暗")]
TIMES_EN = ["at 7 am", "at noon", "at 3 pm", "this evening", "at 9 pm", "tonight", "on Monday", "yesterday"]
TIMES_ZH = ["早上七点", "中午", "下午三点", "今晚", "晚上九点", "周一", "昨天", "明天"]
CHAT_EN = ["how is the battery", "what is the weather like", "tell me a joke", "play some music",
           "how long until you finish", "good morning", "thank you", "where are you now"]
CHAT_ZH = ["电量还有多少", "今天天气怎么样", "讲个笑话", "放点音乐", "还要多久", "早上好", "谢谢", "你现在在哪"]


def distractors(n):
    out = []
    for _ in range(n):
        kind = random.random()
        if kind < 0.35:
            r, d, (a, done), t = random.choice(ROOMS_EN), random.choice(DEV_EN), random.choice(ACT_EN), random.choice(TIMES_EN)
            out.append(f"operator: {a} the {r} {d} {t} | robot: the {r} {d} {done}")
        elif kind < 0.7:
            r, d, (a, done), t = random.choice(ROOMS_ZH), random.choice(DEV_ZH), random.choice(ACT_ZH), random.choice(TIMES_ZH)
            out.append(f"主人：{t}把{r}的{d}{a} | 机器人：{r}的{d}{done}")
        elif kind < 0.85:
            c = random.choice(CHAT_EN)
            out.append(f"operator: {c} | robot: sure, here you go ({random.choice(TIMES_EN)})")
        else:
            c = random.choice(CHAT_ZH)
            out.append(f"主人：{c} | 机器人：好的（{random.choice(TIMES_ZH)}）")
    return out


def main():
    facts = EN + ZH + MIXED
    noise = distractors(230)
    entries = [(t, qs) for t, qs in facts] + [(t, []) for t in noise]
    random.shuffle(entries)
    corpus, queries = [], []
    for i, (text, qs) in enumerate(entries, 1):
        mid = f"m{i:03d}"
        corpus.append({"id": mid, "text": text})
        for q in qs:
            queries.append({"id": f"q{len(queries) + 1:03d}", "query": q, "relevant": [mid]})
    with open("tests/fixtures/memory/corpus.jsonl", "w", encoding="utf-8") as f:
        for c in corpus:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    with open("tests/fixtures/memory/queries.jsonl", "w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    print(f"{len(corpus)} memories, {len(queries)} queries")


if __name__ == "__main__":
    main()
