# ruff: noqa: E501  (one parallel-text row per line)
"""Hand-written parallel text for the real-model probes of language control: English, French, Spanish and German.

``SENTENCES``: 60 simple parallel sentences (similarity probes); ``WORDS``: 48 concrete nouns (few-shot word
translation for the logit lens), none spelt the same in English and its translation. Written for this project;
the seeds of a run use disjoint slices of both lists (see ``real.py``).
"""

from __future__ import annotations


def _table(text: str) -> list[tuple[str, str, str, str]]:
    rows = [tuple(x.strip() for x in line.split("|")) for line in text.strip().splitlines()]
    bad = [r for r in rows if len(r) != 4 or not all(r)]
    if bad:
        raise ValueError(f"a parallel-text row needs four non-empty columns (en | fr | es | de), got {bad[0]}")
    return rows


# en | fr | es | de
SENTENCES = _table(
    """
The cat sleeps on the warm bed. | Le chat dort sur le lit chaud. | El gato duerme en la cama caliente. | Die Katze schläft auf dem warmen Bett.
My brother drinks coffee every morning. | Mon frère boit du café chaque matin. | Mi hermano bebe café cada mañana. | Mein Bruder trinkt jeden Morgen Kaffee.
The children are playing in the garden. | Les enfants jouent dans le jardin. | Los niños juegan en el jardín. | Die Kinder spielen im Garten.
We are going to the sea tomorrow. | Nous allons à la mer demain. | Vamos al mar mañana. | Wir fahren morgen ans Meer.
This book is very interesting. | Ce livre est très intéressant. | Este libro es muy interesante. | Dieses Buch ist sehr interessant.
The train leaves at eight o'clock. | Le train part à huit heures. | El tren sale a las ocho. | Der Zug fährt um acht Uhr ab.
She buys bread at the bakery. | Elle achète du pain à la boulangerie. | Ella compra pan en la panadería. | Sie kauft Brot in der Bäckerei.
It is raining and the street is wet. | Il pleut et la rue est mouillée. | Llueve y la calle está mojada. | Es regnet und die Straße ist nass.
My grandmother lives in a small village. | Ma grand-mère habite dans un petit village. | Mi abuela vive en un pueblo pequeño. | Meine Großmutter wohnt in einem kleinen Dorf.
The doctor works at the hospital. | Le médecin travaille à l'hôpital. | El médico trabaja en el hospital. | Der Arzt arbeitet im Krankenhaus.
I would like a glass of water. | Je voudrais un verre d'eau. | Quisiera un vaso de agua. | Ich möchte ein Glas Wasser.
The sun rises in the east. | Le soleil se lève à l'est. | El sol sale por el este. | Die Sonne geht im Osten auf.
The bird sings in the tree. | L'oiseau chante dans l'arbre. | El pájaro canta en el árbol. | Der Vogel singt im Baum.
My sister reads a long letter. | Ma sœur lit une longue lettre. | Mi hermana lee una carta larga. | Meine Schwester liest einen langen Brief.
The shop opens at nine. | Le magasin ouvre à neuf heures. | La tienda abre a las nueve. | Der Laden öffnet um neun Uhr.
We eat dinner with our friends. | Nous dînons avec nos amis. | Cenamos con nuestros amigos. | Wir essen mit unseren Freunden zu Abend.
The river is very cold in winter. | La rivière est très froide en hiver. | El río está muy frío en invierno. | Der Fluss ist im Winter sehr kalt.
He writes with a blue pen. | Il écrit avec un stylo bleu. | Él escribe con un bolígrafo azul. | Er schreibt mit einem blauen Stift.
The teacher speaks slowly. | Le professeur parle lentement. | El profesor habla despacio. | Der Lehrer spricht langsam.
Our house has a red door. | Notre maison a une porte rouge. | Nuestra casa tiene una puerta roja. | Unser Haus hat eine rote Tür.
The baby sleeps all afternoon. | Le bébé dort tout l'après-midi. | El bebé duerme toda la tarde. | Das Baby schläft den ganzen Nachmittag.
I drink tea with milk. | Je bois du thé avec du lait. | Bebo té con leche. | Ich trinke Tee mit Milch.
The car is in the street. | La voiture est dans la rue. | El coche está en la calle. | Das Auto steht auf der Straße.
My father works in the city. | Mon père travaille en ville. | Mi padre trabaja en la ciudad. | Mein Vater arbeitet in der Stadt.
The apples are on the table. | Les pommes sont sur la table. | Las manzanas están en la mesa. | Die Äpfel liegen auf dem Tisch.
She plays the piano every evening. | Elle joue du piano chaque soir. | Ella toca el piano cada noche. | Sie spielt jeden Abend Klavier.
The dog runs in the park. | Le chien court dans le parc. | El perro corre en el parque. | Der Hund läuft im Park.
We need a new table. | Nous avons besoin d'une nouvelle table. | Necesitamos una mesa nueva. | Wir brauchen einen neuen Tisch.
The moon is bright tonight. | La lune est brillante ce soir. | La luna está brillante esta noche. | Der Mond ist heute Nacht hell.
My friend lives near the school. | Mon ami habite près de l'école. | Mi amigo vive cerca de la escuela. | Mein Freund wohnt in der Nähe der Schule.
The soup is too hot. | La soupe est trop chaude. | La sopa está demasiado caliente. | Die Suppe ist zu heiß.
They walk to the station. | Ils marchent jusqu'à la gare. | Ellos caminan a la estación. | Sie gehen zum Bahnhof.
The flowers are yellow and white. | Les fleurs sont jaunes et blanches. | Las flores son amarillas y blancas. | Die Blumen sind gelb und weiß.
I am looking for my keys. | Je cherche mes clés. | Busco mis llaves. | Ich suche meine Schlüssel.
The window is open. | La fenêtre est ouverte. | La ventana está abierta. | Das Fenster ist offen.
My mother cooks fish on Friday. | Ma mère cuisine du poisson le vendredi. | Mi madre cocina pescado el viernes. | Meine Mutter kocht am Freitag Fisch.
The king lives in a big castle. | Le roi vit dans un grand château. | El rey vive en un gran castillo. | Der König lebt in einem großen Schloss.
The children drink orange juice. | Les enfants boivent du jus d'orange. | Los niños beben zumo de naranja. | Die Kinder trinken Orangensaft.
We are learning a new language. | Nous apprenons une nouvelle langue. | Aprendemos un idioma nuevo. | Wir lernen eine neue Sprache.
The mountain is covered with snow. | La montagne est couverte de neige. | La montaña está cubierta de nieve. | Der Berg ist mit Schnee bedeckt.
He buys a ticket for the train. | Il achète un billet pour le train. | Él compra un billete para el tren. | Er kauft eine Fahrkarte für den Zug.
The old man sits on the bench. | Le vieil homme est assis sur le banc. | El anciano se sienta en el banco. | Der alte Mann sitzt auf der Bank.
My brother has a black horse. | Mon frère a un cheval noir. | Mi hermano tiene un caballo negro. | Mein Bruder hat ein schwarzes Pferd.
The library is closed on Sunday. | La bibliothèque est fermée le dimanche. | La biblioteca está cerrada el domingo. | Die Bibliothek ist am Sonntag geschlossen.
She washes the dishes after lunch. | Elle lave la vaisselle après le déjeuner. | Ella lava los platos después del almuerzo. | Sie spült das Geschirr nach dem Mittagessen.
The students write an exam. | Les étudiants écrivent un examen. | Los estudiantes escriben un examen. | Die Studenten schreiben eine Prüfung.
I like the music of this film. | J'aime la musique de ce film. | Me gusta la música de esta película. | Ich mag die Musik dieses Films.
The boat crosses the lake. | Le bateau traverse le lac. | El barco cruza el lago. | Das Boot überquert den See.
Our neighbours have two cats. | Nos voisins ont deux chats. | Nuestros vecinos tienen dos gatos. | Unsere Nachbarn haben zwei Katzen.
The wind is strong today. | Le vent est fort aujourd'hui. | El viento es fuerte hoy. | Der Wind ist heute stark.
He forgets his umbrella at home. | Il oublie son parapluie à la maison. | Él olvida su paraguas en casa. | Er vergisst seinen Regenschirm zu Hause.
The coffee is ready. | Le café est prêt. | El café está listo. | Der Kaffee ist fertig.
My uncle repairs old clocks. | Mon oncle répare de vieilles horloges. | Mi tío repara relojes viejos. | Mein Onkel repariert alte Uhren.
The girl draws a small house. | La fille dessine une petite maison. | La niña dibuja una casa pequeña. | Das Mädchen zeichnet ein kleines Haus.
We visit the museum on Saturday. | Nous visitons le musée samedi. | Visitamos el museo el sábado. | Wir besuchen das Museum am Samstag.
The bread is fresh and warm. | Le pain est frais et chaud. | El pan está fresco y caliente. | Das Brot ist frisch und warm.
The farmer has many cows. | Le fermier a beaucoup de vaches. | El granjero tiene muchas vacas. | Der Bauer hat viele Kühe.
I sleep eight hours every night. | Je dors huit heures chaque nuit. | Duermo ocho horas cada noche. | Ich schlafe jede Nacht acht Stunden.
The road to the village is long. | La route du village est longue. | El camino al pueblo es largo. | Der Weg zum Dorf ist lang.
She opens the box carefully. | Elle ouvre la boîte avec soin. | Ella abre la caja con cuidado. | Sie öffnet die Kiste vorsichtig.
"""
)
# en | fr | es | de
WORDS = _table(
    """
book | livre | libro | Buch
water | eau | agua | Wasser
flower | fleur | flor | Blume
house | maison | casa | Haus
dog | chien | perro | Hund
moon | lune | luna | Mond
tree | arbre | árbol | Baum
bread | pain | pan | Brot
cat | chat | gato | Katze
sun | soleil | sol | Sonne
city | ville | ciudad | Stadt
friend | ami | amigo | Freund
night | nuit | noche | Nacht
king | roi | rey | König
window | fenêtre | ventana | Fenster
horse | cheval | caballo | Pferd
mountain | montagne | montaña | Berg
fish | poisson | pez | Fisch
table | table | mesa | Tisch
door | porte | puerta | Tür
bird | oiseau | pájaro | Vogel
milk | lait | leche | Milch
snow | neige | nieve | Schnee
river | rivière | río | Fluss
key | clé | llave | Schlüssel
apple | pomme | manzana | Apfel
school | école | escuela | Schule
car | voiture | coche | Auto
street | rue | calle | Straße
letter | lettre | carta | Brief
child | enfant | niño | Kind
woman | femme | mujer | Frau
man | homme | hombre | Mann
sea | mer | mar | Meer
boat | bateau | barco | Boot
egg | œuf | huevo | Ei
cheese | fromage | queso | Käse
mouse | souris | ratón | Maus
church | église | iglesia | Kirche
forest | forêt | bosque | Wald
garden | jardin | jardín | Garten
head | tête | cabeza | Kopf
money | argent | dinero | Geld
time | temps | tiempo | Zeit
year | année | año | Jahr
day | jour | día | Tag
rain | pluie | lluvia | Regen
chair | chaise | silla | Stuhl
"""
)
